"""Strategy revision: traders change strategy at each period's end, by a named protocol.

Each protocol's rule on its own (``market.sim.revision.revise``), then in
the market: ``none`` leaves every table as without it; with revision both
engines give identical tables; the shares are recorded; strategies listed at
share 0 enter only by mutation; a copied learner starts from its model's
table; bad parameters are refused in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from market.sim.model import MarketModel
from market.sim.revision import Revision, replicator_step, revise

ROOT = Path(__file__).resolve().parents[2]
MIXED = dict(n_sellers=40, n_buyers=40, period=5,
             seller_mix={"averaging": 0.4, "qlearning": 0.3, "hardliner": 0.3, "zi-c": 0},
             buyer_mix={"boulware": 0.5, "qlearning": 0.5}, seed=4)


# --- each protocol's rule --------------------------------------------------------------------
def test_imitation_copies_only_better_earners_with_probability_proportional_to_the_gap():
    strategy = np.array([0, 1])
    payoff = np.array([10.0, 40.0])  # the gap is 0.3 of the span
    rule = Revision("imitate", rate=1.0)
    switched = [revise(rule, strategy, payoff, 2, 100.0, np.random.default_rng(s))[0]
                for s in range(4000)]
    low = np.mean([new[0] == 1 for new in switched])
    assert abs(low - 0.3) < 0.03  # the lower earner imitates the higher with p = 0.3
    assert all(new[1] == 1 for new in switched)  # never the other way


def test_moran_without_selection_is_drift_and_with_strong_selection_the_fittest_wins():
    strategy = np.repeat([0, 1, 2], [50, 30, 20])
    payoff = np.where(strategy == 2, 50.0, 0.0)
    drift = np.mean([np.bincount(revise(Revision("moran", rate=1.0, selection=0.0), strategy,
                                        payoff, 3, 100.0, np.random.default_rng(s))[0],
                                 minlength=3) for s in range(300)], axis=0) / 100
    assert np.allclose(drift, [0.5, 0.3, 0.2], atol=0.02)
    strong = revise(Revision("moran", rate=1.0, selection=60.0), strategy, payoff, 3, 100.0,
                    np.random.default_rng(0))[0]
    assert (strong == 2).all()


def test_the_replicator_step_is_the_textbook_formula():
    strategy = np.array([0, 0, 1, 2, 2, 2])
    fitness = np.array([1.0, 3.0, 4.0, 0.5, 0.5, 0.5])
    x = np.array([2, 1, 3]) / 6
    mean = np.array([2.0, 4.0, 0.5])
    expected = x * mean / (x * mean).sum()
    assert np.allclose(replicator_step(strategy, fitness, 4)[:3], expected)
    assert replicator_step(strategy, fitness, 4)[3] == 0.0  # absent stays absent


def test_mutation_brings_in_strategies_nobody_plays_and_nothing_moves_without_revisers():
    strategy = np.zeros(200, dtype=np.int64)
    payoff = np.zeros(200)
    new, model = revise(Revision("imitate", rate=1.0, mutation=0.5), strategy, payoff, 3, 1.0,
                        np.random.default_rng(1))
    assert set(np.unique(new)) == {0, 1, 2} and (model == -1).all()
    same, _ = revise(Revision("moran", rate=0.0), strategy, payoff, 3, 1.0,
                     np.random.default_rng(1))
    assert (same == strategy).all()


# --- in the market ---------------------------------------------------------------------------
def _run(steps: int = 40, **kw) -> MarketModel:
    model = MarketModel(**{**MIXED, **kw})
    for _ in range(steps):
        model.step()
    return model


def test_no_revision_leaves_every_table_as_without_the_parameters():
    plain = _run(seller_mix={"averaging": 0.5, "qlearning": 0.5, "zi-c": 0})
    none = _run(seller_mix={"averaging": 0.5, "qlearning": 0.5, "zi-c": 0}, revision="none",
                revision_rate=0.9, mutation=0.5, selection=3.0, inherit="copy")
    for frame in ("model_frame", "periods_frame", "prices_frame", "agent_frame"):
        assert getattr(plain, frame)().equals(getattr(none, frame)())
    assert plain.rng.bit_generator.state == none.rng.bit_generator.state
    assert none.strategy_names(0) == ["averaging", "qlearning"]  # share 0 dropped as before
    assert none.shares_frame().empty


@pytest.mark.parametrize("protocol", ["imitate", "moran", "replicator"])
@pytest.mark.parametrize("inherit", ["fresh", "copy"])
def test_revision_plays_alike_on_both_engines(protocol, inherit):
    kw = dict(revision=protocol, revision_rate=0.4, mutation=0.05, inherit=inherit,
              clock=True, teams=4, common_wallet=True, seller_discount=0.9)
    a, b = _run(engine="compiled", **kw), _run(engine="lockstep", **kw)
    for frame in ("model_frame", "periods_frame", "shares_frame", "agent_frame"):
        assert getattr(a, frame)().equals(getattr(b, frame)()), frame
    for side in (0, 1):
        for sa, sb in zip(a.strategy_objects(side), b.strategy_objects(side), strict=True):
            if hasattr(sa, "tables"):
                assert np.array_equal(sa.tables, sb.tables)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    moved = a.agent_frame().groupby("AgentID")["strategy"].nunique().max()
    assert moved > 1  # somebody changed strategy


def test_the_shares_table_and_columns_say_who_played_what_each_period():
    model = _run(revision="imitate", revision_rate=0.5, mutation=0.1)
    shares = model.shares_frame()
    assert set(shares["strategy"][shares["side"] == "seller"]) == {
        "averaging", "qlearning", "hardliner", "zi-c"}
    per = shares.groupby(["period", "side"])["share"].sum()
    assert np.allclose(per, 1.0) and len(per) == 2 * 8
    last = shares[shares["period"] == 7].set_index(["side", "strategy"])["traders"]
    now = model.agents_now().groupby(["side", "strategy"]).size()
    assert (last.reindex(now.index) == now).all()  # the last period's players, as they are
    steps = model.model_frame()
    assert np.allclose(steps.filter(like="share.seller.").sum(axis=1), 1.0)


def test_a_strategy_at_share_zero_enters_only_by_mutation():
    without = _run(revision="imitate", revision_rate=0.5)
    assert (without.shares_frame().query("strategy == 'zi-c'")["traders"] == 0).all()
    with_mu = _run(revision="imitate", revision_rate=0.5, mutation=0.2)
    assert with_mu.shares_frame().query("strategy == 'zi-c'")["traders"].max() > 0


def test_with_copy_an_adopted_learner_starts_from_its_model_s_table():
    model = _run(revision="moran", revision_rate=0.6, selection=0.0, inherit="copy", steps=35)
    q = model.strategy_names(0).index("qlearning")
    book = model.sellers
    before = {tuple(t.ravel()) for t in model.strategy_objects(0)[q].tables[
        book.member[book.strategy == q]]}
    was = book.strategy.copy()
    model.revise_strategies()
    joined = np.flatnonzero((book.strategy == q) & (was != q))
    tables = model.strategy_objects(0)[q].tables
    assert joined.size
    for i in joined:  # each newcomer holds the table some learner held before
        assert tuple(tables[book.member[i]].ravel()) in before
    assert any(tables[book.member[i]].any() for i in joined)  # not fresh ones


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"revision": "evolve"}, "revision must be one of none, imitate, moran, replicator"),
    ({"revision": "imitate", "revision_rate": 1.5}, r"revision_rate must be a number in \[0, 1\]"),
    ({"revision": "imitate", "mutation": -0.1}, r"mutation must be a number in \[0, 1\]"),
    ({"revision": "moran", "selection": -1}, "selection must be a number >= 0"),
    ({"revision": "moran", "selection": float("nan")}, "selection must be a number >= 0"),
    ({"revision": "moran", "selection": float("inf")}, "selection must be a number >= 0"),
    ({"revision": "imitate", "inherit": "all"}, "inherit must be one of fresh, copy"),
    ({"revision": "imitate", "seller_mix": {"averaging": 1}, "buyer_mix": {"zi-c": 1}},
     "revision needs a side whose mix lists two strategies"),
])
def test_bad_revision_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MarketModel(**{**MIXED, **kwargs})


def test_the_market_command_writes_the_shares_and_refuses_bad_values_in_one_line(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "run.py", "market", "--steps", "30", "--period", "5",
            "--seller-mix", "averaging=0.5,hardliner=0.5", "--revision", "imitate",
            "--revision-rate", "0.3", "--out", str(out), "--json"]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["parameters"]["revision"] == "imitate"
    assert {"shares.parquet", "shares.png"} <= {p.name for p in out.iterdir()}
    bad = subprocess.run([*args[:-3], "--selection", "-2", "--out", str(tmp_path / "no")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--selection" in bad.stderr
    assert not (tmp_path / "no").exists()


def test_the_batch_grid_sweeps_the_revision_parameters():
    from market.runs import batch

    grid = batch.validate_grid({"revision": ["imitate", "moran"], "mutation": [0, 0.1],
                                "seller_mix.hardliner": [0.5]})
    specs = batch.expand(grid, 1, 0, 10)
    rows = [batch.run_one(s) for s in specs[:2]]
    assert all(r.row["error"] is None for r in rows)
    with pytest.raises(ValueError, match="mutation must be a number in"):
        batch.validate_grid({"revision": ["imitate"], "mutation": [2]})
