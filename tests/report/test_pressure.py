"""The breakdown-and-costs section: theory's columns are the evaluator's, the counts and the
verdicts agree with each other, and the answer says what the table says."""

from __future__ import annotations

import pytest

from market.game import evaluation, theory
from market.game.rules import SELLER, Protocol
from market.report import pressure
from market.report.section import Context


@pytest.fixture(scope="module")
def section():
    return pressure.run(Context(quick=True))


def test_theory_columns_are_the_evaluators(section):
    table = section.tables["pressure.csv"]
    assert set(table["kind"]) == {"breakdown", "costs"}
    for _, r in table.iterrows():
        pr = Protocol(pressure.P, int(r["T"]), breakdown=r["breakdown"],
                      seller_cost=r["seller_cost"], buyer_cost=r["buyer_cost"])
        level, _ = evaluation.deals(*evaluation.spe(pr), pr, SELLER, policies=True)
        assert r["spe_level"] == level[0]
        assert str(r["spe_level"]) in r["spe_set_levels"].split()
        if r["kind"] == "breakdown":
            assert r["theory_limit_lo"] == pytest.approx(1 / (2 - r["breakdown"]))
        else:
            assert (r["theory_limit_lo"], r["theory_limit_hi"]) == theory.cost_split(
                r["seller_cost"], r["buyer_cost"], SELLER)


def test_counts_and_verdicts_agree(section):
    t = section.tables["pressure.csv"]
    assert (t["both"] <= t[["nash", "near_spe"]].min(axis=1)).all()
    assert (t["target_met"] == (t["both"] >= 0.9 * t["seeds"])).all()
    per_seed = section.tables["pressure_seeds.csv"]
    counts = per_seed.groupby("master_seed", sort=False)["target_met"].sum().astype(int)
    assert counts.iloc[0] == int(t["target_met"].sum())  # the first master seed is the table's
    assert len(counts) >= 3  # every headline at three master seeds
    assert (f"met at {', '.join(map(str, counts))} of {len(t)} points" in section.answer)
    assert section.numbers["target_met_per_master_seed"] == counts.tolist()
    assert section.numbers["points"] == len(t)
