"""Hand-written voting histories: commitments, tallies and verdicts (CR-*, TALLY-*)."""

from __future__ import annotations

from typing import Any

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.examples.steps import salt
from ostrom.conformance.generators.recorder import Recorder

__all__ = []

_S1 = salt("v", 0)


@example(
    "voting",
    "commitment",
    "canonical-encoding",
    ["CR-2"],
    "sha256 of the canonical JSON (sorted keys artifact, reason, round, salt, vote, voter; "
    "no spaces; UTF-8): the reason may hold any text, including non-ASCII.",
)
def _(r: Recorder) -> None:
    base = {"op": "commitment", "voter": "ana", "artifact": "x", "round": 1, "vote": "accept"}
    r.do({**base, "reason": "", "salt": _S1})
    r.do({**base, "reason": 'cites "Ostrom, 1990" — §3', "salt": _S1})
    r.do({**base, "reason": "", "salt": _S1, "round": 2}, note="another round, another hash")
    r.do({**base, "reason": "", "salt": _S1, "vote": "retract"})


@example(
    "voting",
    "commitment",
    "invalid-arguments",
    ["CR-2"],
    "An uppercase or short salt, an unknown vote, a negative round or a missing field is "
    "`invalid_input`.",
)
def _(r: Recorder) -> None:
    base = {
        "op": "commitment",
        "voter": "ana",
        "artifact": "x",
        "round": 1,
        "vote": "accept",
        "reason": "",
        "salt": _S1,
    }
    r.do({**base, "salt": _S1.upper()}, "invalid_input")
    r.do({**base, "salt": "abc"}, "invalid_input")
    r.do({**base, "vote": "abstain"}, "invalid_input")
    r.do({**base, "round": -1}, "invalid_input")
    r.do({k: v for k, v in base.items() if k != "reason"}, "invalid_input")
    r.do({"op": "hash", "text": "x"}, "invalid_input", "an unknown op")


@example(
    "voting",
    "select_reviewers",
    "lottery",
    ["LC-SAFE-4"],
    'The sortition: draw j takes index u64(sha256("<seed>|<artifact>|<round>|<j>")) mod n '
    "of the eligible agents sorted by code point, skipping excluded and already drawn agents, "
    "in draw order; another round or seed draws others; the order given does not matter; "
    "k or fewer candidates gives all of them in eligible order.",
)
def _(r: Recorder) -> None:
    el = ["ana", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "jon", "kim"]
    base = {"op": "select_reviewers", "seed": 0, "artifact": "x", "round": 1, "eligible": el}
    r.do({**base, "k": 3})
    r.do({**base, "k": 3, "round": 2})
    r.do({**base, "k": 3, "seed": 7})
    r.do({**base, "k": 5, "eligible": list(reversed(el))}, note="the order given does not matter")
    r.do({**base, "k": 3, "excluded": ["jon", "gus"]}, note="excluded agents are skipped")
    r.do(
        {**base, "k": 3, "excluded": ["ben", "cat", "dan", "eve", "fay", "gus", "nobody"]},
        note="k or fewer candidates: all of them, in eligible order",
    )
    r.do({**base, "k": 4, "eligible": ["ana", "ben"]})
    r.do({**base, "k": 0})
    r.do(
        {**base, "k": 2, "seed": 2**64 + 1, "eligible": [f"a{i:03}" for i in range(300)]},
        note="a seed above 2^64 in decimal; 300 agents",
    )


@example(
    "voting",
    "select_reviewers",
    "invalid-arguments",
    ["LC-SAFE-4"],
    "Repeated eligible agents, a negative k or a non-list (eligible or excluded) is "
    "`invalid_input`.",
)
def _(r: Recorder) -> None:
    base = {"op": "select_reviewers", "seed": 0, "artifact": "x", "round": 1, "k": 2}
    r.do({**base, "eligible": ["ana", "ana"]}, "invalid_input")
    r.do({**base, "eligible": ["ana"], "k": -1}, "invalid_input")
    r.do({**base, "eligible": "ana"}, "invalid_input")
    r.do({**base, "eligible": ["ana"], "excluded": "ana"}, "invalid_input")


def _rv(accept: list[int], reject: list[int], **kw: int) -> dict[str, Any]:
    base = {"quorum": 3, "tau_accept": 600_000, "tau_reject": 400_000, "min_side": 2}
    return {"op": "review_verdict", "accept": accept, "reject": reject, **base, **kw}


@example(
    "voting",
    "review_verdict",
    "thresholds",
    ["TALLY-1"],
    "The review tally in micro-units: accept at share ≥ τ_accept, reject at ≤ τ_reject, "
    "undecided between, no_quorum below the quorum of reveals; exactly at a threshold "
    "decides.",
)
def _(r: Recorder) -> None:
    r.do(_rv([1_000_000, 500_000], [300_000]))
    r.do(_rv([300_000], [1_000_000, 500_000]))
    r.do(_rv([500_000, 500_000], [1_000_000]), note="share 0.5: undecided")
    r.do(_rv([600_000, 600_000], [800_000]), note="share exactly 0.6: accept")
    r.do(_rv([400_000], [300_000, 300_000]), note="share exactly 0.4: reject")
    r.do(_rv([1_000_000], [1_000_000]), note="two reveals < quorum 3")


@example(
    "voting",
    "review_verdict",
    "side-rule",
    ["TALLY-1"],
    "A side wins only with min_side voters: one heavy accept against two light rejects is "
    "undecided, although its share is 0.83; with min_side = 1 it would accept.",
)
def _(r: Recorder) -> None:
    r.do(_rv([1_000_000], [100_000, 100_000]))
    r.do(_rv([1_000_000], [100_000, 100_000], min_side=1))
    r.do(_rv([100_000, 100_000], [1_000_000]), note="a lone heavy reject cannot reject either")
    r.do(_rv([0, 0], [0], quorum=3), note="all weights 0: accept is tested first")


@example(
    "voting",
    "review_verdict",
    "invalid-arguments",
    ["TALLY-1"],
    "Weights are non-negative integers (micro-units); thresholds in [0, 10^6]; quorum ≥ 1.",
)
def _(r: Recorder) -> None:
    r.do(_rv([0.5], [1]), "invalid_input", "a float weight")  # type: ignore[list-item]
    r.do(_rv([-1], [1]), "invalid_input")
    r.do(_rv([1], [1], tau_accept=1_500_000), "invalid_input")
    r.do(_rv([1], [1], quorum=0), "invalid_input")


def _dv(retract: list[int], keep: list[int], **kw: int) -> dict[str, Any]:
    base = {"q_dispute": 5, "tau_retract": 670_000, "min_side": 2}
    return {"op": "dispute_verdict", "retract": retract, "keep": keep, **base, **kw}


@example(
    "voting",
    "dispute_verdict",
    "retract-or-keep",
    ["TALLY-1"],
    "The dispute tally: retract at share ≥ τ_retract with at least min_side retracting; a "
    "lone keeper cannot hold against the others; a lone retracter cannot retract; a missed "
    "quorum keeps.",
)
def _(r: Recorder) -> None:
    r.do(_dv([500_000] * 4, [500_000]))
    r.do(_dv([100_000] * 4, [1_000_000]), note="share 0.29, but one keeper: retract")
    r.do(_dv([100_000] * 3, [500_000, 500_000]), note="share 0.23, two keepers: keep")
    r.do(_dv([1_000_000], [100_000] * 4), note="a lone retracter: keep")
    r.do(_dv([1_000_000] * 4, []), note="four reveals < q_dispute 5: keep")
    r.do(_dv([670_000, 670_000], [330_000, 330_000, 0]), note="share exactly 0.67: retract")


@example(
    "voting",
    "dispute_verdict",
    "invalid-arguments",
    ["TALLY-1"],
    "Missing or ill-typed arguments are `invalid_input`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "dispute_verdict", "retract": [1], "keep": [1]}, "invalid_input")
    r.do(_dv([1], [True]), "invalid_input", "a boolean is not a weight")
