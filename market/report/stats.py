"""The report's statistics: intervals over seeds, tests of a difference, fitted trends.

Every number the report gives with an interval comes from here, so every
interval means the same thing: a two-sided 95% interval over independent
seeds (Student t for means, Welch for a difference of means, Wilson for a
share, t over per-seed fits for a slope). scipy does the distributions.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from market.plots.results import t_interval

if TYPE_CHECKING:
    import pandas as pd

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval, and how many seeds it rests on."""

    value: float
    lo: float
    hi: float
    n: int

    def text(self, digits: int = 2, thousands: bool = False) -> str:
        """``1,234 (1,200 to 1,260)``: the value with its interval in brackets."""
        f = number_format(digits, thousands)
        if not math.isfinite(self.lo):
            return f.format(self.value)
        return f"{f.format(self.value)} ({f.format(self.lo)} to {f.format(self.hi)})"

    def excludes(self, x: float = 0.0) -> bool:
        """Whether the interval lies wholly on one side of ``x``."""
        return math.isfinite(self.lo) and (self.lo > x or self.hi < x)

    def row(self, prefix: str) -> dict[str, float]:
        return {prefix: self.value, f"{prefix}_lo": self.lo, f"{prefix}_hi": self.hi}


def column_text(df: pd.DataFrame, prefix: str, n: int, digits: int = 2) -> list[str]:
    """Each row's ``prefix`` estimate (the columns :meth:`Estimate.row` makes) as text."""
    return [Estimate(v, lo, hi, n).text(digits)
            for v, lo, hi in zip(df[prefix], df[f"{prefix}_lo"], df[f"{prefix}_hi"], strict=True)]


def number_format(digits: int, thousands: bool = False) -> str:
    return f"{{:{',' if thousands else ''}.{digits}f}}"


def mean(values: np.ndarray | list[float]) -> Estimate:
    """Mean over seeds with its Student-t interval (NaN bounds below two values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    m, half = t_interval(v, LEVEL)
    return Estimate(m, m - half, m + half, int(v.size))


@dataclass(frozen=True)
class Difference:
    """``a - b`` between two independent groups of seeds: Welch's t and Mann-Whitney's U."""

    diff: Estimate
    p_welch: float
    p_mann_whitney: float

    @property
    def significant(self) -> bool:
        return self.p_welch < 1 - LEVEL

    def text(self, digits: int = 2, thousands: bool = False) -> str:
        """``+0.12 (+0.05 to +0.19; p = 0.003)``: signed, with its interval and p-value."""
        f = f"{{:+{',' if thousands else ''}.{digits}f}}"
        d = self.diff
        return (f"{f.format(d.value)} ({f.format(d.lo)} to {f.format(d.hi)}; "
                f"{p_text(self.p_welch)})")


def difference(a: np.ndarray, b: np.ndarray) -> Difference:
    """Difference of means with Welch's interval and p-value, and the rank test's p-value."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(a.mean() - b.mean())
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # no spread at all: nothing to test
        same = d == 0
        return Difference(Estimate(d, d, d, a.size + b.size), 1.0 if same else 0.0,
                          1.0 if same else 0.0)
    with warnings.catch_warnings():  # nearly constant groups (every seed at one value) are
        warnings.simplefilter("ignore", RuntimeWarning)  # common here, and still tested right
        welch = stats.ttest_ind(a, b, equal_var=False)
        ci = welch.confidence_interval(LEVEL)
        mw = stats.mannwhitneyu(a, b, alternative="two-sided")
    return Difference(Estimate(d, float(ci.low), float(ci.high), a.size + b.size),
                      float(welch.pvalue), float(mw.pvalue))


def share(hits: int, n: int) -> Estimate:
    """A proportion with its Wilson interval."""
    from scipy import stats

    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    ci = stats.binomtest(int(hits), int(n)).proportion_ci(LEVEL, method="wilson")
    return Estimate(hits / n, float(ci.low), float(ci.high), int(n))


def slopes(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Least-squares coefficients of ``y ~ 1 + x`` fitted within each group (a seed).

    ``x``: (n, k) regressors. Returns (groups, k + 1): intercept first. A
    trend's interval is then the t-interval of a coefficient over groups:
    traders of one market share its history, so only seeds are independent.
    """
    out = []
    for g in np.unique(groups):
        m = groups == g
        design = np.column_stack([np.ones(m.sum()), x[m]])
        coef, *_ = np.linalg.lstsq(design, y[m], rcond=None)
        out.append(coef)
    return np.asarray(out)


def p_text(p: float) -> str:
    """A p-value as a reader wants it: ``p = 0.03``, ``p < 0.001``."""
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"


def trend(x: np.ndarray, y: np.ndarray) -> Estimate:
    """Slope of ``y`` on ``x`` over independent runs (each its own seed), with its t-interval."""
    from scipy import stats

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 3 or np.ptp(x) == 0:
        return Estimate(math.nan, math.nan, math.nan, int(x.size))
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.5 + LEVEL / 2, x.size - 2) * fit.stderr)
    return Estimate(float(fit.slope), fit.slope - half, fit.slope + half, int(x.size))
