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
from market.sim.revision import Revision, fitness, replicator_step, revise

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
    # about n events, one at a time: every replaced trader takes the fittest's strategy
    assert (strong[strong != strategy] == 2).all() and (strong == 2).sum() >= 60


def test_the_replicator_step_is_the_textbook_formula():
    strategy = np.array([0, 0, 1, 2, 2, 2])
    x = np.array([2, 1, 3]) / 6
    fit = np.array([2.0, 4.0, 0.5, 0.0])  # each strategy's fitness
    expected = x * fit[:3] / (x * fit[:3]).sum()
    assert np.allclose(replicator_step(strategy, fit, 4)[:3], expected)
    assert replicator_step(strategy, fit, 4)[3] == 0.0  # absent stays absent


def test_a_strategy_s_fitness_is_that_of_its_mean_payoff():
    """Traulsen, Shoresh and Nowak's (2008) mapping of the strategy's mean payoff, not the
    mean of its traders' exponentials (which favours a strategy with lucky traders)."""
    strategy = np.array([0, 0, 1, 1])
    scaled = np.array([0.0, 1.0, 0.5, 0.5])  # equal means, one spread
    assert np.allclose(fitness(strategy, scaled, 5.0, 3), [1.0, 1.0, 0.0])


def test_mutation_brings_in_strategies_nobody_plays_and_nothing_moves_without_revisers():
    strategy = np.zeros(200, dtype=np.int64)
    payoff = np.zeros(200)
    new, model = revise(Revision("imitate", rate=1.0, mutation=0.5), strategy, payoff, 3, 1.0,
                        np.random.default_rng(1))
    assert set(np.unique(new)) == {0, 1, 2} and (model == -1).all()
    same, _ = revise(Revision("moran", rate=0.0), strategy, payoff, 3, 1.0,
                     np.random.default_rng(1))
    assert (same == strategy).all()


# --- what each protocol does to the shares, in expectation -----------------------------------
def _side(n: int = 400, x1: float = 0.3, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """A side of ``n`` traders, a share ``x1`` playing strategy 1, whose period payoffs (in
    shares of a span of 100) are 0.5 +- 0.05; strategy 0 earns 0.3 on average but spread
    +- 0.4 (lucky and unlucky traders: a mean of exponentials would favour it)."""
    rng = np.random.default_rng(seed)
    strategy = (np.arange(n) < int(x1 * n)).astype(np.int64)
    noise = np.where(strategy == 1, 0.05, 0.4) * rng.uniform(-1, 1, n)
    payoff = 100.0 * (np.where(strategy == 1, 0.5, 0.3) + noise)
    return strategy, payoff


def _expected(protocol: str, strategy: np.ndarray, payoff: np.ndarray, rate: float,
              w: float) -> float:
    """The share of strategy 1 after one revision, in expectation, by the module docstring's
    formulas (computed here from the payoffs, not by the module)."""
    n = strategy.size
    x = strategy.mean()
    pi = payoff / 100.0
    if protocol == "imitate":  # a reviser meets one of the n - 1 others
        beta = 1.0 / max(1.0, pi.max() - pi.min())
        gain = np.maximum(pi[None, :] - pi[:, None], 0.0) * beta  # i imitates j
        np.fill_diagonal(gain, 0.0)
        into = gain[strategy == 0][:, strategy == 1].sum() / (n - 1)
        out = gain[strategy == 1][:, strategy == 0].sum() / (n - 1)
        return x + rate * (into - out) / n
    mean = np.array([pi[strategy == s].mean() for s in (0, 1)])
    fit = np.exp(w * (mean - mean.max()))
    if protocol == "replicator":
        target = x * fit[1] / (x * fit[1] + (1 - x) * fit[0])
        return (1 - rate) * x + rate * target
    # moran: the mean-field path of K ~ Binomial(n, rate) events, one at a time
    path = [x]
    for _ in range(n):
        y = path[-1]
        path.append(y + (y * fit[1] / (y * fit[1] + (1 - y) * fit[0]) - y) / n)
    k = np.arange(n + 1)
    from math import comb, log

    logp = np.array([log(comb(n, int(i))) for i in k]) + k * np.log(rate) + (n - k) * np.log(
        1 - rate)
    return float(np.exp(logp) @ np.array(path))


@pytest.mark.parametrize("protocol, w", [
    ("imitate", 1.0), ("replicator", 1.0), ("replicator", 5.0), ("moran", 1.0), ("moran", 5.0),
])
def test_the_mean_share_follows_the_protocol_s_expected_change(protocol, w):
    """Over 3,000 seeds, the mean share of strategy 1 after one revision matches the module
    docstring's expected change within four standard errors (plus 0.002 for the Moran
    mean field's curvature). At w = 5 the old fitness (the mean over a strategy's traders of
    exp(w * payoff)) misses it by far: it rewarded strategy 0's lucky traders."""
    strategy, payoff = _side()
    rule = Revision(protocol, rate=0.2, selection=w)
    got = np.array([revise(rule, strategy, payoff, 2, 100.0, np.random.default_rng(s))[0].mean()
                    for s in range(3000)])
    want = _expected(protocol, strategy, payoff, 0.2, w)
    se = got.std(ddof=1) / np.sqrt(got.size)
    assert abs(got.mean() - want) < 4 * se + 0.002, (got.mean(), want, se)
    assert want > strategy.mean()  # the better strategy gains


def test_imitation_stays_proportional_when_payoffs_span_more_than_the_price_range():
    """Traders who lose money (costs per offer, zi-u): a gap of 1.5 spans is not clipped to
    a certain switch; beta is one over the range the payoffs span (Schlag's condition)."""
    strategy = np.array([0, 1, 1])
    payoff = np.array([-100.0, 50.0, 20.0])  # range 1.5 spans
    rule = Revision("imitate", rate=1.0)
    low = np.mean([revise(rule, strategy, payoff, 2, 100.0, np.random.default_rng(s))[0][0]
                   for s in range(6000)])
    # meets trader 1 (gap 1.5) or 2 (gap 1.2), each with p 1/2; beta = 1 / 1.5
    assert abs(low - 0.5 * (1.5 + 1.2) / 1.5) < 0.02


def test_moran_is_one_birth_and_one_death_at_a_time():
    """rate 1 / n: one event per period in expectation; each event changes at most one
    trader, and only to a strategy that someone played."""
    strategy = np.repeat([0, 1], [5, 5])
    payoff = np.where(strategy == 1, 50.0, 0.0)
    changes = []
    for s in range(2000):
        new, _ = revise(Revision("moran", rate=0.1, selection=1.0), strategy, payoff, 3, 100.0,
                        np.random.default_rng(s))
        changes.append(int((new != strategy).sum()))
        assert set(new.tolist()) <= {0, 1}
    # K ~ Binomial(10, 0.1): a period with one event changes at most one trader
    assert np.mean(changes) < 1.0 and max(changes) <= 10


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
    for frame, fa in plain.datacollector.frames().items():
        assert fa.equals(none.datacollector.frames()[frame])
    assert plain.rng.bit_generator.state == none.rng.bit_generator.state
    assert none.market.names[0] == ["averaging", "qlearning"]  # share 0 dropped as before
    assert none.datacollector.get_table_dataframe("shares").empty


@pytest.mark.parametrize("protocol", ["imitate", "moran", "replicator"])
@pytest.mark.parametrize("inherit", ["fresh", "copy"])
def test_revision_plays_alike_on_both_engines(protocol, inherit):
    kw = dict(revision=protocol, revision_rate=0.4, mutation=0.05, inherit=inherit,
              clock=True, teams=4, common_wallet=True, seller_discount=0.9)
    a, b = _run(engine="compiled", **kw), _run(engine="lockstep", **kw)
    for frame, fa in a.datacollector.frames().items():
        assert fa.equals(b.datacollector.frames()[frame]), frame
    for side in (0, 1):
        for sa, sb in zip(a.market.strategies[side], b.market.strategies[side], strict=True):
            if hasattr(sa, "tables"):
                assert np.array_equal(sa.tables, sb.tables)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    moved = a.datacollector.agent_frame().groupby("AgentID")["strategy"].nunique().max()
    assert moved > 1  # somebody changed strategy


def test_the_shares_table_and_columns_say_who_played_what_each_period():
    model = _run(revision="imitate", revision_rate=0.5, mutation=0.1)
    shares = model.datacollector.get_table_dataframe("shares")
    assert set(shares["strategy"][shares["side"] == "seller"]) == {
        "averaging", "qlearning", "hardliner", "zi-c"}
    per = shares.groupby(["period", "side"])["share"].sum()
    assert np.allclose(per, 1.0) and len(per) == 2 * 8
    last = shares[shares["period"] == 7].set_index(["side", "strategy"])["traders"]
    now = model.market.agents_now().groupby(["side", "strategy"]).size()
    assert (last.reindex(now.index) == now).all()  # the last period's players, as they are
    steps = model.datacollector.get_model_vars_dataframe()
    assert np.allclose(steps.filter(like="share.seller.").sum(axis=1), 1.0)


def test_a_strategy_at_share_zero_enters_only_by_mutation():
    without = _run(revision="imitate", revision_rate=0.5)
    shares = without.datacollector.get_table_dataframe("shares")
    assert (shares.query("strategy == 'zi-c'")["traders"] == 0).all()
    with_mu = _run(revision="imitate", revision_rate=0.5, mutation=0.2)
    shares = with_mu.datacollector.get_table_dataframe("shares")
    assert shares.query("strategy == 'zi-c'")["traders"].max() > 0


def test_with_copy_an_adopted_learner_starts_from_its_model_s_table():
    model = _run(revision="moran", revision_rate=0.6, selection=0.0, inherit="copy", steps=35)
    q = model.market.names[0].index("qlearning")
    book = model.sellers
    before = {tuple(t.ravel()) for t in model.market.strategies[0][q].tables[
        book.member[book.strategy == q]]}
    was = book.strategy.copy()
    model.revise_strategies()
    joined = np.flatnonzero((book.strategy == q) & (was != q))
    tables = model.market.strategies[0][q].tables
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
