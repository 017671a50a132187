"""The report's statistics against hand-worked values and scipy's own."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

from market.report import stats


def test_mean_is_the_student_t_interval():
    est = stats.mean([1.0, 2.0, 3.0, 4.0])
    half = sp.t.ppf(0.975, 3) * np.std([1, 2, 3, 4], ddof=1) / 2
    assert est.value == 2.5 and est.n == 4
    assert est.lo == pytest.approx(2.5 - half) and est.hi == pytest.approx(2.5 + half)
    assert est.text(1) == f"2.5 ({2.5 - half:.1f} to {2.5 + half:.1f})"
    assert math.isnan(stats.mean([7.0]).lo)  # one seed has no interval


def test_difference_is_welch_and_mann_whitney():
    rng = np.random.default_rng(1)
    a, b = rng.normal(1, 1, 50), rng.normal(0, 2, 80)
    d = stats.difference(a, b)
    welch = sp.ttest_ind(a, b, equal_var=False)
    assert d.diff.value == pytest.approx(a.mean() - b.mean())
    assert d.p_welch == pytest.approx(welch.pvalue)
    assert (d.diff.lo, d.diff.hi) == pytest.approx(tuple(welch.confidence_interval()))
    assert d.p_mann_whitney == pytest.approx(sp.mannwhitneyu(a, b).pvalue)
    assert d.significant == (welch.pvalue < 0.05)


def test_difference_of_constant_groups_is_exact():
    assert stats.difference(np.ones(5), np.ones(4)).p_welch == 1.0
    d = stats.difference(np.ones(5), np.zeros(4))
    assert d.diff.value == 1.0 and d.significant


def test_share_is_wilson():
    est = stats.share(0, 20)
    assert est.value == 0 and est.lo == 0 and 0.1 < est.hi < 0.2  # Wilson: 0.161
    assert stats.share(20, 20).hi == pytest.approx(1.0)


def test_slopes_are_fitted_per_group():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (300, 2))
    groups = np.repeat([0, 1, 2], 100)
    y = 1.0 + 2.0 * x[:, 0] - 3.0 * x[:, 1] + groups  # a different intercept per group
    coef = stats.slopes(x, y, groups)
    assert coef.shape == (3, 3)
    assert coef[:, 0] == pytest.approx([1.0, 2.0, 3.0])
    assert coef[:, 1:] == pytest.approx(np.tile([2.0, -3.0], (3, 1)))


def test_trend_recovers_a_slope_and_refuses_a_constant_x():
    rng = np.random.default_rng(3)
    x = np.repeat([0.0, 0.5, 1.0], 30)
    est = stats.trend(x, 0.2 * x + rng.normal(0, 0.05, x.size))
    assert est.lo < 0.2 < est.hi and est.excludes(0)
    assert math.isnan(stats.trend(np.ones(10), np.arange(10.0)).value)


def test_p_values_read_as_a_reader_wants():
    assert stats.p_text(0.0004) == "p < 0.001"
    assert stats.p_text(0.004) == "p = 0.004"
    assert stats.p_text(0.23) == "p = 0.23"


def test_holm_adjusts_in_order_and_never_lowers_a_p_value():
    def diff(p: float) -> stats.Difference:
        return stats.Difference(stats.Estimate(1.0, 0.5, 1.5, 10), p, p)

    out = stats.holm({"a": diff(0.01), "b": diff(0.04), "c": diff(0.03)})
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert [out[k].p_holm for k in "acb"] == pytest.approx([0.03, 0.06, 0.06])
    assert all(out[k].p_holm >= out[k].p_welch for k in out)
    assert out["a"].verdict == "borderline, not stated as a finding"
    assert out["b"].verdict == "not significant" and not out["b"].significant


def test_a_bounded_mean_keeps_its_interval_inside_the_bounds():
    values = np.array([0.99, 1.0, 1.0, 0.2])  # a t interval would pass 1
    t = stats.mean(values)
    assert t.hi > 1
    b = stats.mean(values, (0.0, 1.0))
    assert b.value == pytest.approx(t.value) and 0 <= b.lo <= b.value <= b.hi <= 1
    assert stats.mean(values, (0.0, 1.0)) == b  # the bootstrap depends on the values alone


def test_a_paired_difference_uses_the_pairs_and_states_what_it_could_detect():
    rng = np.random.default_rng(1)
    base = rng.normal(0, 5, 30)
    a, b = base + 0.3 + rng.normal(0, 0.1, 30), base
    paired, unpaired = stats.difference(a, b, paired=True), stats.difference(a, b)
    assert paired.significant and not unpaired.significant
    # the smallest detectable difference: (t.975 + t.80) standard errors
    se = np.std(a - b, ddof=1) / np.sqrt(30)
    assert paired.diff.detectable() == pytest.approx(se * 2.85, rel=0.03)
    assert "the design would detect" in unpaired.judged() and "not significant" in (
        unpaired.judged())
