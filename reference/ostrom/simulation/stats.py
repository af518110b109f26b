"""Paired comparisons of per-seed results (the paper's §5.5 tests, with effect sizes).

Two configurations run with the same seeds give two equal-length samples of a metric
(``a[i]`` and ``b[i]`` from seed i).  ``paired(a, b)`` compares them:

* seeds where either value is NaN (e.g. precision when nothing is active) are dropped,
  and ``n`` says how many pairs are left;
* ``diff`` is mean(a - b); ``p`` the two-sided paired t-test (``scipy.stats.ttest_rel``);
* ``d_z`` is Cohen's d_z = mean(a - b) / sd(a - b) (sd with ddof = 1): the difference
  in units of its own seed-to-seed spread, the effect size that matches a paired test;
* ``ci_low``/``ci_high`` the t-based confidence interval (95% by default) of mean(a - b).

Degenerate cases, stated rather than left to whatever scipy returns:

* ``n < 2``: sd, p, d_z and the CI are NaN (one pair says nothing about spread);
* every difference equal (sd(a - b) = 0): if they are all 0 the samples are identical —
  p = 1, d_z = 0, CI = [0, 0] (e.g. an ablation of a mechanism that never fires); if
  they are all the same non-zero c, the shift is exact — p = 0, d_z = ±inf, CI = [c, c].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as sps  # type: ignore[import-untyped]


@dataclass(frozen=True)
class Summary:
    """Mean, sample SD (ddof = 1) and count of the non-NaN values."""

    mean: float
    sd: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {k: _json(v) for k, v in asdict(self).items()}


def summarize(values: Sequence[float]) -> Summary:
    """``Summary`` of ``values`` with NaNs dropped (mean NaN if none is left, sd NaN if
    fewer than two)."""
    x = _finite(values)
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    sd = float(x.std(ddof=1)) if n >= 2 else math.nan
    return Summary(mean, sd, n)


def mean_ci(s: Summary, confidence: float = 0.95) -> tuple[float, float]:
    """The t-based confidence interval of the mean of ``s`` (NaN below two values; the
    mean itself when every value is the same)."""
    if s.n < 2 or math.isnan(s.sd):
        return (math.nan, math.nan)
    half = float(sps.t.ppf(0.5 + confidence / 2, s.n - 1)) * s.sd / math.sqrt(s.n)
    return (s.mean - half, s.mean + half)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of sample ``a`` against sample ``b`` (see the module doc)."""

    n: int  # pairs with both values present
    dropped: int  # pairs dropped because either value was NaN
    mean_a: float
    sd_a: float
    mean_b: float
    sd_b: float
    diff: float  # mean(a - b)
    sd_diff: float
    p: float  # two-sided paired t-test
    d_z: float  # mean(a - b) / sd(a - b)
    ci_low: float
    ci_high: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {k: _json(v) for k, v in asdict(self).items()}


def paired(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Paired:
    """Compare ``a`` with ``b`` pair by pair (``a[i]``, ``b[i]``: the same seed)."""
    if len(a) != len(b):
        raise ValueError(f"paired: samples differ in length ({len(a)} vs {len(b)})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"paired: confidence must be in (0, 1), got {confidence}")
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    keep = ~(np.isnan(xa) | np.isnan(xb))
    xa, xb = xa[keep], xb[keep]
    n = int(xa.size)
    sa, sb = summarize(list(xa)), summarize(list(xb))
    d = xa - xb
    diff = float(d.mean()) if n else math.nan
    nan = math.nan
    if n < 2:
        p = d_z = sd_diff = lo = hi = nan
    else:
        sd_diff = float(d.std(ddof=1))
        if sd_diff == 0.0 or np.all(d == d[0]):
            sd_diff, diff = 0.0, float(d[0])
            if diff == 0.0:
                p, d_z = 1.0, 0.0
            else:
                p, d_z = 0.0, math.copysign(math.inf, diff)
            lo = hi = diff
        else:
            p = float(sps.ttest_rel(xa, xb).pvalue)
            d_z = diff / sd_diff
            half = float(sps.t.ppf(0.5 + confidence / 2, n - 1)) * sd_diff / math.sqrt(n)
            lo, hi = diff - half, diff + half
    return Paired(
        n=n,
        dropped=len(a) - n,
        mean_a=sa.mean,
        sd_a=sa.sd,
        mean_b=sb.mean,
        sd_b=sb.sd,
        diff=diff,
        sd_diff=sd_diff,
        p=p,
        d_z=d_z,
        ci_low=lo,
        ci_high=hi,
        confidence=confidence,
    )


def _finite(values: Sequence[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    x: np.ndarray[Any, np.dtype[np.float64]] = np.asarray(values, dtype=float)
    kept: np.ndarray[Any, np.dtype[np.float64]] = x[~np.isnan(x)]
    return kept


def _json(v: Any) -> Any:
    """NaN -> None and ±inf -> "inf"/"-inf", so that the value is valid JSON."""
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


__all__ = ["Paired", "Summary", "mean_ci", "paired", "summarize"]
