"""The plasticity experiment's metrics: pure functions of trial records.

Why pure functions of a record: the definitions are the experiment's claims, so each one
is a few lines testable on hand-built records, independent of any mechanism.  A
``TrialRecord`` is what a run saw of one trial: its cell, its old, new and conflicting
values, and ``served[i]``, the value its slot served after round ``t_valid + i`` for
i = 0 .. T (the window).

Per trial (``outcome``), at the end of its window (``served[-1]``):

* **plasticity**: the valid update is the served value (it was adopted within T rounds
  of its proposal and is still served);
* **stale retention**: the old value is served (never replaced, or re-adopted: for the
  ``repeated`` kind the old value *is* the conflict, and counts here);
* **wrong adoption**: another conflicting value of the trial is served (a same-slot
  competitor);
* the three are exclusive; their complement is "nothing served" (not reachable by the
  mechanisms here, which never empty a slot) and is not a metric;
* **displaced**: the valid update was served at some round of the window but is not at
  its end (adopted, then overwritten);
* **time to adoption**: for a plastic trial, the rounds from the valid update's proposal
  to the round from which it is served without interruption to the window's end (0:
  served in its own round); a trial that is not plastic at the window's end is
  *censored*: it has no time, is excluded from the mean and counted.

Aggregates (``summarize``) are shares of the trials (NaN for no trial) and the mean time
over the adopted trials (NaN if none); ``by_cell`` groups per (kind, k).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: The ``Summary`` fields that are counts (0, not None, for a cell without trials).
COUNT_FIELDS = frozenset({"trials", "censored"})


@dataclass(frozen=True)
class TrialRecord:
    """What a run saw of one trial (``served[i]``: after round ``t_valid + i``)."""

    kind: str
    k: int
    old: str
    new: str
    conflicts: frozenset[str]  # the values the trial's conflicting proposals carried
    served: tuple[str | None, ...]  # length window + 1

    @property
    def cell(self) -> tuple[str, int]:
        return (self.kind, self.k)


@dataclass(frozen=True)
class Outcome:
    """One trial's metrics."""

    plastic: bool
    stale: bool
    wrong: bool
    displaced: bool
    adoption: int | None  # rounds; None when censored (not plastic)


def outcome(rec: TrialRecord) -> Outcome:
    """The metrics of one trial (the module docstring defines each)."""
    if not rec.served:
        raise ValueError("a trial record needs at least the round of its valid update")
    end = rec.served[-1]
    plastic = end == rec.new
    stale = end == rec.old
    wrong = not plastic and not stale and end is not None and end in rec.conflicts
    displaced = not plastic and rec.new in rec.served
    adoption: int | None = None
    if plastic:
        i = len(rec.served) - 1
        while i > 0 and rec.served[i - 1] == rec.new:
            i -= 1
        adoption = i
    return Outcome(plastic, stale, wrong, displaced, adoption)


@dataclass(frozen=True)
class Summary:
    """Aggregates over a set of trials."""

    trials: int
    plasticity: float
    stale_retention: float
    wrong_adoption: float
    displaced: float
    time_to_adoption: float  # mean over the adopted trials
    censored: int  # trials without an adoption time

    def as_dict(self) -> dict[str, float | int | None]:
        """JSON-able (NaN becomes None)."""
        return {
            "trials": self.trials,
            "plasticity": _none(self.plasticity),
            "stale_retention": _none(self.stale_retention),
            "wrong_adoption": _none(self.wrong_adoption),
            "displaced": _none(self.displaced),
            "time_to_adoption": _none(self.time_to_adoption),
            "censored": self.censored,
        }


def _none(v: float) -> float | None:
    return None if math.isnan(v) else v


def _share(n: int, of: int) -> float:
    return n / of if of else math.nan


def summarize(outcomes: Iterable[Outcome]) -> Summary:
    """Shares of the trials and the mean adoption time (NaN when undefined)."""
    out = list(outcomes)
    n = len(out)
    times = [o.adoption for o in out if o.adoption is not None]
    return Summary(
        trials=n,
        plasticity=_share(sum(o.plastic for o in out), n),
        stale_retention=_share(sum(o.stale for o in out), n),
        wrong_adoption=_share(sum(o.wrong for o in out), n),
        displaced=_share(sum(o.displaced for o in out), n),
        time_to_adoption=sum(times) / len(times) if times else math.nan,
        censored=n - len(times),
    )


def by_cell(records: Iterable[TrialRecord]) -> dict[tuple[str, int], Summary]:
    """``summarize`` per (kind, k), in sorted order."""
    groups: dict[tuple[str, int], list[Outcome]] = {}
    for rec in records:
        groups.setdefault(rec.cell, []).append(outcome(rec))
    return {cell: summarize(groups[cell]) for cell in sorted(groups)}


def pooled(
    records: Iterable[TrialRecord],
    kinds: Iterable[str] | None = None,
    counts: Iterable[int] | None = None,
) -> Summary:
    """``summarize`` over the records of the given kinds and counts (None: all)."""
    ks = None if kinds is None else set(kinds)
    cs = None if counts is None else set(counts)
    return summarize(
        outcome(r) for r in records if (ks is None or r.kind in ks) and (cs is None or r.k in cs)
    )


def nested(
    cells: Mapping[tuple[str, int], Summary],
    field: str,
    kinds: Iterable[str],
    counts: Iterable[int],
) -> dict[str, dict[str, float | int | None]]:
    """``{kind: {"k0": value, ...}}`` of one ``Summary`` field (None where no trial)."""
    cs = tuple(counts)
    out: dict[str, dict[str, float | int | None]] = {}
    for kind in kinds:
        row: dict[str, float | int | None] = {}
        for k in cs:
            s = cells.get((kind, k))
            if s is None:
                row[f"k{k}"] = 0 if field in COUNT_FIELDS else None
            else:
                row[f"k{k}"] = s.as_dict()[field]
        out[kind] = row
    return out


__all__ = [
    "COUNT_FIELDS",
    "Outcome",
    "Summary",
    "TrialRecord",
    "by_cell",
    "nested",
    "outcome",
    "pooled",
    "summarize",
]
