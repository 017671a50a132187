"""The time-costs section: theory's columns are the evaluator's, the counts and the verdicts
agree with each other, and the answer says what the table says."""

from __future__ import annotations

import pytest

from market.game import evaluation, theory
from market.game.rules import SELLER, Protocol
from market.report import timecosts
from market.report.section import Context


@pytest.fixture(scope="module")
def section():
    return timecosts.run(Context(quick=True))


def test_theory_columns_are_the_evaluators(section):
    table = section.tables["timecosts.csv"]
    assert len(table) == 4
    for r in table.itertuples():
        pr = Protocol(timecosts.P, r.T, r.seller_discount, r.buyer_discount)
        level, move = evaluation.deals(*evaluation.spe(pr), pr, SELLER, policies=True)
        assert r.spe_level == level[0] and move[0] == 1
        assert str(r.spe_level) in r.spe_set_levels.split()
        assert r.horizon_split == pytest.approx(
            theory.horizon_split(r.seller_discount, r.buyer_discount, 2 * r.T - 1)[0])
        assert r.rubinstein_split == pytest.approx(
            theory.rubinstein_split(r.seller_discount, r.buyer_discount)[0])


def test_counts_and_verdicts_agree(section):
    t = section.tables["timecosts.csv"]
    assert (t["both"] <= t[["nash", "near_spe"]].min(axis=1)).all()
    assert (t["both"] <= t["both_set"]).all() and (t["near_spe"] <= t["seeds"]).all()
    assert (t["target_met"] == (t["both"] >= 0.9 * t["seeds"])).all()
    assert (t["nash_lo"] <= t["nash"] / t["seeds"]).all()
    assert (t["learned_share_p10"] <= t["learned_share_median"]).all()
    met = int(t["target_met"].sum())
    assert f"met at {met} of {len(t)} points" in section.answer
    assert section.numbers == {"target_met": met, "points": len(t),
                               "both_share": pytest.approx(t["both"].sum() / t["seeds"].sum())}
