"""Loading a parameter file for ``check-params``: relations a theorem states may fail to hold."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ostrom.protocol.params import DEFAULTS, ParamError, Params, range_problems

__all__ = ["UncheckedParams", "load_params"]


class UncheckedParams(Params):
    """Parameters whose types and ranges are validated but whose *relations* are not.

    ``Params`` refuses ``tau_reject >= tau_accept``, unordered tier thresholds and
    non-increasing sanction thresholds; here those are theorems (TALLY-1, TIER-MONO,
    SAN-MONO) that must be able to fail with a counterexample, so a file breaking them
    has to load.  For the theorems only: never run the orchestrator with one.
    """

    def __post_init__(self) -> None:
        problems = range_problems(self)
        if problems:
            raise ParamError("; ".join(problems))


#: Values satisfying the relations the theorems state; substituted to find the *other*
#: relation problems (quorum > reviewers, w_min > w_max, ...), which stay input errors.
_THEOREM_RELATIONS: Final[dict[str, Any]] = {
    "tau_accept": 1.0,
    "tau_reject": 0.0,
    "tier1_rep": 0.0,
    "tier2_rep": 0.0,
    "tier3_rep": 0.0,
    "sigma1": 1,
    "sigma2": 2,
    "sigma3": 3,
    "sigma4": 4,
}


def load_params(source: str | Path | Mapping[str, Any] | None = None) -> Params:
    """A parameter file or mapping for ``check-params``; keys not given take defaults.

    Unknown keys, wrong types, out-of-range values and the relations no theorem states
    raise ``ParamError`` naming them.  A set that breaks only relations a theorem states
    comes back as ``UncheckedParams`` (the theorems refute it), a valid one as ``Params``.
    """
    if source is None:
        return DEFAULTS
    raw = (
        UncheckedParams.from_mapping(source)
        if isinstance(source, Mapping)
        else UncheckedParams.from_toml(source)
    )
    values = raw.to_dict()
    Params.from_mapping({**values, **_THEOREM_RELATIONS})  # raises on the other relations
    try:
        return Params.from_mapping(values)
    except ParamError:
        return raw
