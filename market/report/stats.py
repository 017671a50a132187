"""The report's statistics: intervals over seeds, tests of a difference, fitted trends.

Every number the report gives with an interval comes from here, so every
interval means the same thing: a two-sided 95% interval over independent
seeds (Student t for means, a percentile bootstrap for a measure with bounds
such as an efficiency or a share, so that its interval stays inside them;
Welch for a difference of means, a paired t where both arms share their
seeds; Wilson for a proportion; t over per-seed fits for a slope). scipy does
the distributions.

The words are decided here too, so that no sentence can say more than its
test: :func:`verdict` calls a result a *finding* only below :data:`FINDING`
(after Holm's correction over a question's confirmatory tests,
:func:`holm`), *borderline* between that and 5% (reported, never stated as a
finding), and otherwise *not significant*, with the smallest difference the
design would have detected (:meth:`Estimate.detectable`, 80% power).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from market.plots.results import t_interval

if TYPE_CHECKING:
    import pandas as pd

LEVEL = 0.95
#: a p-value (Holm-adjusted where the test is confirmatory) below this is a finding; up to
#: 1 - LEVEL it is borderline: shown, never stated as a finding (a rerun with another seed
#: could well lose it)
FINDING = 0.01
#: the power at which :meth:`Estimate.detectable` states the smallest detectable difference
POWER = 0.80


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval, and how many seeds it rests on."""

    value: float
    lo: float
    hi: float
    n: int
    #: standard error (NaN where the interval is not a t or normal one)
    se: float = math.nan
    #: degrees of freedom of ``se`` (inf: normal)
    df: float = math.inf

    def detectable(self) -> float:
        """The smallest true effect this design finds at the 5% level with 80% power:
        ``(t(0.975) + t(0.80)) * se``."""
        from scipy import stats

        if not (math.isfinite(self.se) and self.se > 0 and self.df > 0):
            return math.nan
        return float((stats.t.ppf(0.5 + LEVEL / 2, self.df) + stats.t.ppf(POWER, self.df))
                     * self.se)

    def text(self, digits: int = 2, thousands: bool = False) -> str:
        """``1,234 (1,200 to 1,260)``: the value with its interval in brackets."""
        f = number_format(digits, thousands)
        if not math.isfinite(self.value):
            return "n/a"
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


def mean(values: np.ndarray | list[float], bounds: tuple[float, float] | None = None
         ) -> Estimate:
    """Mean over seeds with its Student-t interval (NaN bounds below two values).

    ``bounds``: the measure's range (an efficiency or a share in [0, 1], a
    distance >= 0): the interval is then a percentile bootstrap of the mean
    (10,000 resamples, a fixed stream: it depends on the values alone), which
    never leaves the range the values lie in.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    m, half = t_interval(v, LEVEL)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    if bounds is None or v.size < 2:
        return Estimate(m, m - half, m + half, int(v.size), se, v.size - 1)
    lo, hi = bootstrap_interval(v)
    return Estimate(m, max(lo, bounds[0]), min(hi, bounds[1]), int(v.size), se, v.size - 1)


def bootstrap_interval(v: np.ndarray, resamples: int = 10_000) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``v``."""
    rng = np.random.default_rng(0)
    means = v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    q = (1 - LEVEL) / 2
    lo, hi = np.quantile(means, [q, 1 - q])
    return float(lo), float(hi)


@dataclass(frozen=True)
class Difference:
    """``a - b`` between two independent groups of seeds: Welch's t and Mann-Whitney's U."""

    diff: Estimate
    p_welch: float
    p_mann_whitney: float
    #: Holm-adjusted p-value if the test is confirmatory (:func:`holm`), else NaN
    p_holm: float = math.nan

    @property
    def p(self) -> float:
        """The p-value that decides: Holm-adjusted where the test is confirmatory."""
        return self.p_holm if math.isfinite(self.p_holm) else self.p_welch

    @property
    def significant(self) -> bool:
        """A finding: p (Holm-adjusted if confirmatory) below :data:`FINDING`."""
        return self.p < FINDING

    @property
    def verdict(self) -> str:
        return verdict(self.p)

    def text(self, digits: int = 2, thousands: bool = False) -> str:
        """``+0.12 (+0.05 to +0.19; p = 0.003)``: signed, with its interval and p-value
        (and the Holm-adjusted one where the test is confirmatory)."""
        f = f"{{:+{',' if thousands else ''}.{digits}f}}"
        d = self.diff
        holm = (f", Holm-adjusted {p_text(self.p_holm)}" if math.isfinite(self.p_holm)
                else "")
        return (f"{f.format(d.value)} ({f.format(d.lo)} to {f.format(d.hi)}; "
                f"{p_text(self.p_welch)}{holm})")

    def judged(self, digits: int = 2, thousands: bool = False) -> str:
        """``+0.12 (+0.05 to +0.19; p = 0.003; a finding)``: the value, its interval, p and
        verdict, and for a difference not found, the smallest one the design would have
        found: what a sentence may say about it."""
        f = f"{{:+{',' if thousands else ''}.{digits}f}}"
        d = self.diff
        holm = (f", Holm-adjusted {p_text(self.p_holm)}" if math.isfinite(self.p_holm)
                else "")
        verdict = self.verdict
        if not self.significant:
            mde = d.detectable()
            if math.isfinite(mde):
                g = f"{{:{',' if thousands else ''}.{digits}f}}"
                verdict += f", the design would detect ±{g.format(mde)}"
        return (f"{f.format(d.value)} ({f.format(d.lo)} to {f.format(d.hi)}; "
                f"{p_text(self.p_welch)}{holm}; {verdict})")


def difference(a: np.ndarray, b: np.ndarray, paired: bool = False) -> Difference:
    """Difference of means with Welch's interval and p-value, and the rank test's p-value.

    ``paired``: ``a[i]`` and ``b[i]`` share their seed (common random numbers):
    the paired t-test and Wilcoxon's signed-rank test instead.
    """
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = float(a.mean() - b.mean())
    spread = np.ptp(a - b) if paired else max(np.ptp(a), np.ptp(b))
    if spread == 0:  # no spread at all: nothing to test
        same = d == 0
        return Difference(Estimate(d, d, d, a.size + b.size, 0.0, a.size - 1),
                          1.0 if same else 0.0, 1.0 if same else 0.0)
    with warnings.catch_warnings():  # nearly constant groups (every seed at one value) are
        warnings.simplefilter("ignore", RuntimeWarning)  # common here, and still tested right
        if paired:
            test = stats.ttest_rel(a, b)
            rank = stats.wilcoxon(a - b).pvalue
            se, df = float(np.std(a - b, ddof=1) / math.sqrt(a.size)), a.size - 1
        else:
            test = stats.ttest_ind(a, b, equal_var=False)
            rank = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
            va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
            se = float(math.sqrt(va + vb))
            df = float(test.df)
        ci = test.confidence_interval(LEVEL)
    return Difference(Estimate(d, float(ci.low), float(ci.high), a.size + b.size, se, df),
                      float(test.pvalue), float(rank))


def holm(diffs: dict[str, Difference]) -> dict[str, Difference]:
    """The same differences with Holm's adjusted p-values: one question's confirmatory
    family, whose family-wise error rate is then at most the level."""
    order = sorted(diffs, key=lambda k: diffs[k].p_welch)
    m, running, out = len(order), 0.0, {}
    for i, k in enumerate(order):
        running = max(running, min(1.0, (m - i) * diffs[k].p_welch))
        out[k] = replace(diffs[k], p_holm=running)
    return {k: out[k] for k in diffs}


def verdict(p: float) -> str:
    """What a sentence may call a result with p-value ``p``."""
    if p < FINDING:
        return "a finding"
    if p < 1 - LEVEL:
        return "borderline, not stated as a finding"
    return "not significant"


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
    return Estimate(float(fit.slope), fit.slope - half, fit.slope + half, int(x.size),
                    float(fit.stderr), x.size - 2)


def p_of(e: Estimate) -> float:
    """Two-sided p-value of ``e`` against 0 (its t statistic on ``e.df`` degrees)."""
    from scipy import stats

    if not (math.isfinite(e.se) and e.se > 0):
        return math.nan
    return float(2 * stats.t.sf(abs(e.value) / e.se, e.df))


def as_difference(e: Estimate) -> Difference:
    """An estimate tested against 0 (a slope, a fitted effect), as a :class:`Difference`."""
    return Difference(e, p_of(e), math.nan)


@dataclass(frozen=True)
class Test:
    """One test a section ran: confirmatory (it answers the document's question, and is
    Holm-corrected with the question's other confirmatory tests) or exploratory."""

    label: str
    diff: Difference
    confirmatory: bool
    digits: int = 2

    def row(self, section: str) -> dict[str, object]:
        d = self.diff.diff
        return {"section": section, "test": self.label,
                "kind": "confirmatory" if self.confirmatory else "exploratory",
                "estimate": d.value, "lo": d.lo, "hi": d.hi, "n": d.n,
                "p": self.diff.p_welch, "p_holm": self.diff.p_holm,
                "verdict": self.diff.verdict, "detectable": d.detectable()}


def family(confirmatory: dict[str, Difference], exploratory: dict[str, Difference] | None = None,
           digits: int | dict[str, int] = 2) -> tuple[dict[str, Difference], list[Test]]:
    """A question's tests: the confirmatory ones Holm-corrected together. Returns the
    corrected confirmatory differences (for the text) and every test (for the table)."""
    conf = holm(confirmatory) if confirmatory else {}
    expl = exploratory or {}

    def dig(k: str) -> int:
        return digits.get(k, 2) if isinstance(digits, dict) else digits

    tests = [Test(k, d, True, dig(k)) for k, d in conf.items()]
    tests += [Test(k, d, False, dig(k)) for k, d in expl.items()]
    return conf, tests
