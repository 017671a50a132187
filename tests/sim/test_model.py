"""The marketplace's invariants: money, rationality, periods, efficiency, reproducibility."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import mesa
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from market.game import qtable
from market.game.rules import SELLER, Observation
from market.sim.agents import Buyer, Seller
from market.sim.learners import MarketQLearning
from market.sim.model import MarketModel
from strategies.rule_based import RuleBased

MIXED = {"averaging": 0.5, "qlearning": 0.5}


class _AcceptAny(RuleBased):
    """Offers its own reservation level; accepts any offer that does not lose money."""

    name = "test-accept-any"

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        return obs.lo if self.side == SELLER else obs.hi

    def accepts(self, obs: Observation, target: np.ndarray) -> np.ndarray:
        return self.acceptable(obs)


@contextlib.contextmanager
def accept_any() -> Iterator[str]:
    """Register the test strategy only for the duration of a test (the registry is global)."""
    strategies.register(_AcceptAny)
    try:
        yield _AcceptAny.name
    finally:
        strategies.STRATEGIES.pop(_AcceptAny.name, None)


def _rational_names() -> list[str]:
    """Registered strategies that promise never to trade outside their range, plus the market
    learner (rational by default in the market)."""
    names = [
        n for n, cls in strategies.STRATEGIES.items()
        if cls.classifier.get("individually_rational") and "test" not in n
    ]
    return sorted({*names, "qlearning"})


def _deals(model: MarketModel) -> pd.DataFrame:
    """The last step's deals with each trader's reservation price."""
    pairs = model.pairs_frame()
    res = model.agents_frame().set_index("unique_id")["reservation"]
    pairs = pairs[pairs["level"] > 0].copy()
    pairs["cost"] = res.loc[pairs["seller_id"]].to_numpy()
    pairs["value"] = res.loc[pairs["buyer_id"]].to_numpy()
    return pairs


# --- Mesa structure ----------------------------------------------------------------------
def test_agents_are_mesa_agents_viewing_the_arrays():
    model = MarketModel(n_buyers=7, n_sellers=5, seller_mix=MIXED, seed=3)
    assert isinstance(model, mesa.Model)
    assert len(model.agents) == 12
    assert len(model.agents_by_type[Seller]) == 5 and len(model.agents_by_type[Buyer]) == 7
    for _ in range(4):
        model.step()
    frame = model.agents_frame().set_index("unique_id")
    for agent in model.agents:
        row = frame.loc[agent.unique_id]
        assert agent.side_name == row["side"] and agent.strategy == row["strategy"]
        assert agent.reservation == row["reservation"] and agent.wallet == row["earnings"]
        assert agent.trades == row["trades"]
    sellers = model.agents_by_type[Seller]
    assert sorted(set(sellers.get("strategy"))) == ["averaging", "qlearning"]
    assert all(s.cost == s.reservation for s in sellers)


def test_mix_counts_follow_the_shares():
    model = MarketModel(n_buyers=10, n_sellers=9, buyer_mix={"averaging": 0.3, "qlearning": 0.7},
                        seller_mix=MIXED, seed=0)
    buyers = model.agents_frame().query("side == 'buyer'")["strategy"].value_counts()
    sellers = model.agents_frame().query("side == 'seller'")["strategy"].value_counts()
    assert buyers.to_dict() == {"qlearning": 7, "averaging": 3}
    assert sorted(sellers.tolist()) == [4, 5]  # 4.5 each, the remainder to one of them


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"buyer_mix": {"averaging": 0.6}}, "sum to 1"),
        ({"seller_mix": {"nope": 1.0}}, "unknown strategy"),
        ({"n_buyers": 0}, "n_buyers"),
        ({"n_sellers": -2}, "n_sellers"),
        ({"buyer_mix": {"averaging": 1.5, "qlearning": -0.5}}, ">= 0"),
        ({"period": 0}, "period"),
        ({"value_range": (5, 5)}, "value_range"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MarketModel(**kwargs)


# --- invariants ----------------------------------------------------------------------------
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_b=st.integers(1, 40),
    n_s=st.integers(1, 40),
    share=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 10_000),
    redraw=st.booleans(),
    first=st.sampled_from(["random", "seller", "buyer"]),
)
def test_money_is_conserved(n_b, n_s, share, seed, redraw, first):
    mix = {"averaging": 1 - share, "qlearning": share}
    model = MarketModel(n_buyers=n_b, n_sellers=n_s, buyer_mix=mix, seller_mix=mix, period=3,
                        redraw=redraw, first=first, seed=seed)
    for _ in range(7):
        model.step()
    received = model.sellers.cash.sum()
    paid = -model.buyers.cash.sum()
    assert received == pytest.approx(paid, abs=1e-9)
    s = model.summary()
    assert received == pytest.approx(s["mean_price"] * s["deals"] if s["deals"] else 0.0)
    earned = model.sellers.earnings.sum() + model.buyers.earnings.sum()
    assert earned == pytest.approx(s["realised_surplus"])
    assert model.sellers.trades.sum() == model.buyers.trades.sum() == s["deals"]


@pytest.mark.parametrize("name", _rational_names())
def test_rational_traders_never_trade_outside_their_reservation_price(name):
    seller_mix = {name: 0.5, "averaging": 0.5} if name != "averaging" else {name: 1.0}
    model = MarketModel(n_buyers=60, n_sellers=60, buyer_mix={name: 1.0},
                        seller_mix=seller_mix, period=4, redraw=True, seed=11)
    deals = 0
    for _ in range(12):
        model.step()
        d = _deals(model)
        deals += len(d)
        assert (d["price"] >= d["cost"] - 1e-9).all()
        assert (d["price"] <= d["value"] + 1e-9).all()
    periods = model.periods_frame()
    eff = periods["efficiency"].to_numpy()
    assert ((eff >= 0) & (eff <= 1 + 1e-12)).all()
    assert deals > 0 or name in ("hardliner",)  # two hardliners may never agree


def test_unconstrained_learners_can_lose_money_which_is_why_rational_is_the_default():
    model = MarketModel(n_buyers=80, n_sellers=80, buyer_mix={"qlearning": 1.0},
                        seller_mix={"qlearning": 1.0}, rational_learners=False, seed=2,
                        strategy_params={"qlearning": {"epsilon_start": 1.0, "epsilon_end": 1.0}})
    losses = 0
    for _ in range(10):
        model.step()
        d = _deals(model)
        losses += int(((d["price"] < d["cost"]) | (d["price"] > d["value"])).sum())
    assert losses > 0


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 60), seed=st.integers(0, 10_000), first=st.sampled_from(["random", "buyer"])
)
def test_market_of_accepting_traders_with_overlapping_ranges_is_fully_efficient(n, seed, first):
    with accept_any() as name:
        model = MarketModel(n_buyers=n, n_sellers=n, buyer_mix={name: 1.0}, seller_mix={name: 1.0},
                            value_range=(60, 100), cost_range=(0, 40), period=3, first=first,
                            seed=seed)
        for _ in range(6):
            model.step()
    periods = model.periods_frame()
    assert (periods["deals"] == n).all()
    assert np.allclose(periods["efficiency"], 1.0)
    assert model.summary()["efficiency"] == pytest.approx(1.0)
    # all trade in the first step of each period, then wait for the next period
    assert model.model_frame()["deals"].tolist()[1:] == [n, 0, 0, n, 0, 0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_b=st.integers(1, 30), n_s=st.integers(1, 30), seed=st.integers(0, 1000),
       period=st.integers(1, 4))
def test_each_trader_trades_at_most_one_unit_per_period(n_b, n_s, seed, period):
    model = MarketModel(n_buyers=n_b, n_sellers=n_s, buyer_mix=MIXED, seller_mix=MIXED,
                        period=period, seed=seed)
    for _ in range(3):  # periods
        start = (model.sellers.trades.copy(), model.buyers.trades.copy())
        for _ in range(period):
            model.step()
        assert ((model.sellers.trades - start[0]) <= 1).all()
        assert ((model.buyers.trades - start[1]) <= 1).all()
    periods = model.periods_frame()
    assert (periods["deals"] <= min(n_b, n_s)).all()
    assert len(periods) == 3


def test_values_are_kept_or_redrawn_between_periods():
    kept = MarketModel(n_buyers=20, n_sellers=20, period=2, seed=4)
    redrawn = MarketModel(n_buyers=20, n_sellers=20, period=2, redraw=True, seed=4)
    before = (kept.values, redrawn.values)
    for m in (kept, redrawn):
        for _ in range(3):
            m.step()
    assert np.array_equal(kept.values, before[0])
    assert not np.array_equal(redrawn.values, before[1])
    assert redrawn.periods_frame()["ce_price_lo"].nunique() == 1  # one period closed so far


# --- reproducibility -----------------------------------------------------------------------
def _frames(seed: int, **kw) -> list[pd.DataFrame]:
    model = MarketModel(n_buyers=40, n_sellers=35, buyer_mix=MIXED, seller_mix=MIXED, period=5,
                        seed=seed, **kw)
    for _ in range(12):
        model.step()
    return [model.model_frame(), model.periods_frame(), model.agent_frame(), model.pairs_frame()]


@pytest.mark.parametrize("kw", [{}, {"redraw": True, "learner_params": "drawn", "clock": True}])
def test_same_seed_same_tables_bit_for_bit(kw):
    a, b = _frames(5, **kw), _frames(5, **kw)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)
    c = _frames(6, **kw)
    assert not a[0].equals(c[0])


# --- data collection, traces, options ----------------------------------------------------
def test_agent_data_is_collected_per_period_by_default_or_on_request():
    model = MarketModel(n_buyers=5, n_sellers=5, period=3, seed=0)
    for _ in range(7):
        model.step()
    df = model.agent_frame()
    assert sorted(df["Step"].unique()) == [3, 6]
    assert len(df) == 2 * 10
    model.collect_agents()
    assert sorted(model.agent_frame()["Step"].unique()) == [3, 6, 7]
    none = MarketModel(n_buyers=5, n_sellers=5, period=3, agent_data="none", seed=0)
    none.step()
    assert none.agent_frame().empty
    every = MarketModel(n_buyers=5, n_sellers=5, period=3, agent_data="step", seed=0)
    every.step()
    every.step()
    assert sorted(every.agent_frame()["Step"].unique()) == [0, 1, 2]


def test_model_table_has_a_row_per_step_with_price_statistics():
    model = MarketModel(n_buyers=30, n_sellers=30, seed=1)
    for _ in range(5):
        model.step()
    df = model.model_frame()
    assert df["step"].tolist() == [0, 1, 2, 3, 4, 5]
    traded = df[df["deals"] > 0]
    assert not traded.empty
    assert (traded["min_price"] <= traded["mean_price"]).all()
    assert (traded["mean_price"] <= traded["max_price"]).all()
    assert (traded["price_std"] >= 0).all()
    assert {"earnings.seller.averaging", "earnings.buyer.averaging", "efficiency",
            "ce_price_lo", "buyer_share"} <= set(df.columns)
    # the prices table holds every deal: per step, per level, how many
    prices = model.prices_frame()
    per_step = prices.groupby("step")["deals"].sum().reindex(df["step"], fill_value=0)
    assert per_step.tolist() == df["deals"].astype(int).tolist()
    weighted = (prices["price"] * prices["deals"]).groupby(prices["step"]).sum() / per_step[
        per_step > 0
    ]
    assert np.allclose(weighted.to_numpy(), traded["mean_price"].to_numpy())


def test_trace_of_a_pair_matches_the_pairs_table():
    model = MarketModel(n_buyers=10, n_sellers=10, seed=2)
    model.step()
    pairs = model.pairs_frame()
    for i in range(len(pairs)):
        tr = model.trace(i)
        assert tr.seller.unique_id == pairs["seller_id"][i]
        assert tr.buyer.unique_id == pairs["buyer_id"][i]
        assert (tr.record.deal_level or 0) == pairs["level"][i]
        assert model.trace_of(tr.buyer).seller is tr.seller
        rows = tr.moves()
        assert rows[0]["action"] == "offer" and len(rows) == tr.record.moves[-1].move + 1
        if tr.price is not None:
            assert tr.price == pairs["price"][i]
    with pytest.raises(ValueError, match="pair"):
        model.trace(len(pairs))


def test_common_wallet_pools_earnings_per_team():
    model = MarketModel(n_buyers=12, n_sellers=12, teams=3, common_wallet=True, seed=5)
    for _ in range(10):
        model.step()
    frame = model.agents_frame()
    pooled = frame.groupby("team")["earnings"].sum()
    for agent in model.agents:
        assert agent.wallet == pytest.approx(pooled[agent.team])
    assert frame["team"].nunique() == 6  # 3 per side
    s = model.summary()
    assert sum(v for k, v in s.items() if k.startswith("earnings.team.")) == pytest.approx(
        s["realised_surplus"]
    )


def test_clocked_learners_see_the_time_left():
    model = MarketModel(n_buyers=20, n_sellers=20, buyer_mix={"qlearning": 1.0},
                        seller_mix={"qlearning": 1.0}, clock=True, period=6, seed=3)
    seen: list[np.ndarray] = []
    learner = model.strategy_objects(0)[0]
    original = learner.act

    def spy(obs, rng):
        seen.append(np.unique(obs.time_left))
        return original(obs, rng)

    learner.act = spy
    for _ in range(6):
        model.step()
    assert isinstance(learner, MarketQLearning) and learner.buckets == 4
    assert sorted({int(x) for arr in seen for x in arr}) == [1, 2, 3, 4, 5, 6]


def test_drawn_learning_parameters_differ_per_agent():
    model = MarketModel(n_buyers=30, n_sellers=30, buyer_mix={"qlearning": 1.0},
                        learner_params="drawn", seed=0)
    learner = model.strategy_objects(1)[0]
    assert np.unique(learner.lr).size == 30 and np.unique(learner.gamma).size == 30


def test_summary_is_flat_floats():
    model = MarketModel(n_buyers=20, n_sellers=25, buyer_mix=MIXED, seed=0)
    for _ in range(15):
        model.step()
    s = model.summary()
    assert all(isinstance(v, float) for v in s.values())
    assert {"efficiency", "mean_price", "deals", "ce_price_lo", "ce_price_hi", "buyer_share",
            "seller_share", "earnings.buyer.qlearning", "earnings.seller.averaging"} <= set(s)
    assert 0 <= s["efficiency"] <= 1
    assert s["buyer_share"] + s["seller_share"] == pytest.approx(1.0)
    assert not math.isnan(s["mean_price"])


def test_a_pickled_model_continues_exactly_like_the_original():
    """Batch runs ship models between processes; a copy must not drift from the original."""
    import pickle

    model = MarketModel(n_buyers=15, n_sellers=12, buyer_mix=MIXED, seller_mix=MIXED, period=4,
                        clock=True, seed=8)
    for _ in range(6):
        model.step()
    copy = pickle.loads(pickle.dumps(model))
    for m in (model, copy):
        for _ in range(5):
            m.step()
    assert copy.summary() == model.summary()
    pd.testing.assert_frame_equal(copy.model_frame(), model.model_frame(), check_exact=True)


def test_learners_can_start_from_a_saved_table(tmp_path):
    """``qlearning:FILE.npz`` in a mix: every member starts from the file's table for its side."""
    from market.game.rules import Protocol
    from market.game.tables import TablePair, save_tables

    proto = Protocol(5, 5)
    rng = np.random.default_rng(0)
    pair = TablePair(proto, rng.random((2, qtable.n_rows(proto), proto.n_actions)),
                     rng.random((2, qtable.n_rows(proto), proto.n_actions)))
    path = tmp_path / "q.npz"
    save_tables(path, pair)
    spec = f"qlearning:{path}"
    model = MarketModel(n_buyers=6, n_sellers=4, buyer_mix={spec: 1.0},
                        seller_mix={"averaging": 0.5, spec: 0.5}, seed=0)
    buyers, sellers = model.strategy_objects(1)[0], model.strategy_objects(0)[1]
    assert np.array_equal(buyers.tables[3], pair.buyer)
    assert np.array_equal(sellers.tables[1], pair.seller)
    model.step()
    assert model.agents_frame()["strategy"].str.startswith("qlearning:").sum() == 8
    with pytest.raises(ValueError, match="takes nothing after .*qlearning:FILE.npz"):
        MarketModel(buyer_mix={f"averaging:{path}": 1.0})


def test_team_earnings_are_collected_every_step_and_add_up():
    model = MarketModel(n_buyers=6, n_sellers=6, teams=3, common_wallet=True, seed=1)
    for _ in range(25):
        model.step()
    frame = model.model_frame()
    cols = [c for c in frame.columns if c.startswith("earnings.team.")]
    assert len(cols) == 6
    last = frame.iloc[-1]
    summary = model.summary()
    for c in cols:
        assert last[c] == summary[c]
    sellers = sum(last[f"earnings.team.seller.{k}"] for k in range(3))
    assert sellers == pytest.approx(model.sellers.earnings.sum())


def test_shares_a_hair_over_one_never_make_more_traders_than_asked():
    from market.sim.model import check_mix

    # 1.0000009 passes the sum-to-1 check; unnormalised it made 2,000,001 labels
    mix = check_mix("buyer_mix", {"averaging": 1.0000009})
    model = MarketModel(n_buyers=2, n_sellers=2, seed=0)
    labels, counts = model._assign(mix, 2_000_000)
    assert labels.size == 2_000_000 and counts.tolist() == [2_000_000]
