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


# --- the reviewers' statistics (issue 43, item 5) ------------------------------------------

#: Resamples of the paired bootstrap and of the sign-flip test: enough that the third
#: decimal of a CI bound or a p-value does not move with the resampling seed.
RESAMPLES = 10_000
#: Sarle's bimodality coefficient above this (the value of a uniform distribution, 5/9)
#: suggests two modes: the table then reports the distribution, not only the mean.
BIMODAL_BC = 5 / 9


@dataclass(frozen=True)
class Robust:
    """A paired comparison that assumes no distribution: the mean difference, its paired
    bootstrap percentile CI (seeds resampled with their pairs kept together), and the
    two-sided sign-flip permutation p-value (under H0 each seed's difference is as likely
    negative as positive).  ``p_holm`` is filled in by :func:`holm` across a table."""

    n: int
    diff: float
    ci_low: float
    ci_high: float
    p: float
    p_holm: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return {k: _json(v) for k, v in asdict(self).items()}


def robust(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Robust:
    """Compare ``a`` with ``b`` pair by pair, without a normality assumption (bimodal
    outcomes make the t-test's CI and p meaningless).  Deterministic: the resampling
    stream is seeded with ``seed``.  NaN pairs are dropped; below two pairs the CI and p
    are NaN."""
    if len(a) != len(b):
        raise ValueError(f"robust: samples differ in length ({len(a)} vs {len(b)})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"robust: confidence must be in (0, 1), got {confidence}")
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    keep = ~(np.isnan(xa) | np.isnan(xb))
    d = xa[keep] - xb[keep]
    n = int(d.size)
    diff = float(d.mean()) if n else math.nan
    if n < 2:
        return Robust(n, diff, math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    means = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = (float(v) for v in np.quantile(means, [alpha, 1.0 - alpha]))
    if np.all(d == 0.0):
        p = 1.0
    else:
        signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, n))
        null = np.abs((signs * d).mean(axis=1))
        # the observed statistic counts as one of the permutations: p is never 0
        p = float((1 + np.count_nonzero(null >= abs(diff) - 1e-15)) / (resamples + 1))
    return Robust(n, diff, lo, hi, p)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (one table's comparisons):
    the i-th smallest is multiplied by (m - i), made monotone and capped at 1.  NaN stays
    NaN and does not count in m."""
    ps = [float(p) for p in pvalues]
    order = sorted((p, i) for i, p in enumerate(ps) if not math.isnan(p))
    m = len(order)
    out = [math.nan] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def bimodality(values: Sequence[float]) -> float:
    """Sarle's bimodality coefficient (skewness² + 1) / (excess kurtosis + 3(n-1)²/((n-2)
    (n-3))), with the sample (bias-corrected) moments; NaN below four values or with no
    spread.  Above ``BIMODAL_BC`` the outcome is reported as a distribution."""
    x = _finite(values)
    n = int(x.size)
    if n < 4 or float(x.std()) == 0.0:
        return math.nan
    g = float(sps.skew(x, bias=False))
    k = float(sps.kurtosis(x, bias=False))
    return (g * g + 1.0) / (k + 3.0 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def quantiles(values: Sequence[float]) -> tuple[float, float, float, float, float]:
    """Min, lower quartile, median, upper quartile and max of the non-NaN values."""
    x = _finite(values)
    if not x.size:
        return (math.nan, math.nan, math.nan, math.nan, math.nan)
    q = np.quantile(x, [0.0, 0.25, 0.5, 0.75, 1.0])
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]), float(q[4]))


__all__ = [
    "BIMODAL_BC",
    "RESAMPLES",
    "Paired",
    "Robust",
    "Summary",
    "bimodality",
    "holm",
    "mean_ci",
    "paired",
    "quantiles",
    "robust",
    "summarize",
]
