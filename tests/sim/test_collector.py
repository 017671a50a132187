"""What the DataCollector records: model variables every step, agent data when due, two tables."""

from __future__ import annotations

import numpy as np
import pytest

from market.sim.model import MarketModel


def test_agent_data_is_collected_per_period_by_default_or_on_request():
    model = MarketModel(n_buyers=5, n_sellers=5, period=3, seed=0)
    for _ in range(7):
        model.step()
    df = model.datacollector.agent_frame()
    assert sorted(df["Step"].unique()) == [3, 6]
    assert len(df) == 2 * 10
    model.datacollector.collect_agents(model)
    assert sorted(model.datacollector.agent_frame()["Step"].unique()) == [3, 6, 7]
    none = MarketModel(n_buyers=5, n_sellers=5, period=3, agent_data="none", seed=0)
    none.step()
    assert none.datacollector.agent_frame().empty
    every = MarketModel(n_buyers=5, n_sellers=5, period=3, agent_data="step", seed=0)
    every.step()
    every.step()
    assert sorted(every.datacollector.agent_frame()["Step"].unique()) == [0, 1, 2]


def test_model_table_has_a_row_per_step_with_price_statistics():
    model = MarketModel(n_buyers=30, n_sellers=30, seed=1)
    for _ in range(5):
        model.step()
    df = model.datacollector.get_model_vars_dataframe()
    assert df["step"].tolist() == [0, 1, 2, 3, 4, 5]
    traded = df[df["deals"] > 0]
    assert not traded.empty
    assert (traded["min_price"] <= traded["mean_price"]).all()
    assert (traded["mean_price"] <= traded["max_price"]).all()
    assert (traded["price_std"] >= 0).all()
    assert {"earnings.seller.averaging", "earnings.buyer.averaging", "efficiency",
            "ce_price_lo", "buyer_share"} <= set(df.columns)
    # the prices table holds every deal: per step, per level, how many
    prices = model.datacollector.get_table_dataframe("prices")
    per_step = prices.groupby("step")["deals"].sum().reindex(df["step"], fill_value=0)
    assert per_step.tolist() == df["deals"].astype(int).tolist()
    weighted = (prices["price"] * prices["deals"]).groupby(prices["step"]).sum() / per_step[
        per_step > 0
    ]
    assert np.allclose(weighted.to_numpy(), traded["mean_price"].to_numpy())


def test_team_earnings_are_collected_every_step_and_add_up():
    model = MarketModel(n_buyers=6, n_sellers=6, teams=3, common_wallet=True, seed=1)
    for _ in range(25):
        model.step()
    frame = model.datacollector.get_model_vars_dataframe()
    cols = [c for c in frame.columns if c.startswith("earnings.team.")]
    assert len(cols) == 6
    last = frame.iloc[-1]
    summary = model.summary()
    for c in cols:
        assert last[c] == summary[c]
    sellers = sum(last[f"earnings.team.seller.{k}"] for k in range(3))
    assert sellers == pytest.approx(model.sellers.earnings.sum())


@pytest.mark.parametrize("way", ["step", "run"])
@pytest.mark.parametrize("kw", [{}, {"revision": "moran", "teams": 3, "common_wallet": True},
                                {"revision": "imitate"}])
def test_rows_made_when_read_are_the_rows_of_each_step(kw, way):
    """The collector keeps each step (or a compiled call's steps, through ``run``) and makes
    its rows when the table is read: reading after every call (as the browser view does) or
    once at the end gives the same tables."""
    mix = {"averaging": 0.5, "zi-c": 0.5}
    eager = MarketModel(n_buyers=12, n_sellers=10, period=4, seller_mix=mix, seed=5, **kw)
    lazy = MarketModel(n_buyers=12, n_sellers=10, period=4, seller_mix=mix, seed=5, **kw)
    for n in [1] * 13 if way == "step" else [3, 2, 5, 3]:
        for model in (eager, lazy):
            model.step() if way == "step" else model.run(n)
        eager.datacollector.frames()
    for name, frame in eager.datacollector.frames().items():
        assert frame.equals(lazy.datacollector.frames()[name]), name
    model = eager.datacollector.get_model_vars_dataframe()
    assert len(model) == 14 and model["run.deals"].iloc[-1] == eager.summary()["deals"]
    prices = eager.datacollector.get_table_dataframe("prices")
    assert prices["deals"].sum() == eager.summary()["deals"]


@pytest.mark.parametrize("kw", [{}, {"revision": "imitate", "teams": 2}, {"revision": "imitate"}])
def test_a_long_run_leaves_nothing_per_step_for_the_cyclic_collector(kw):
    """What a step keeps (its snapshot, its prices; a compiled call's steps, through ``run``)
    is plain tuples of numbers and arrays, nested at most two deep, which Python's collector
    stops tracking within two passes (one level a pass): kept as objects, they reached the
    oldest generation, whose full collections (a walk of everything numba and Mesa hold)
    cost a small market a tenth of its step."""
    import gc

    model = MarketModel(n_sellers=20, n_buyers=20, period=5, seed=3,
                        seller_mix={"averaging": 0.5, "qlearning": 0.5}, **kw)
    for _ in range(20):
        model.step()
    gc.collect()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(200):
        model.step()
    model.run(1000)  # a period's steps a compiled call (the teams market: step by step)
    gc.collect()
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 50, f"{grown} tracked objects more after 1,200 steps"
    assert len(model.datacollector.get_model_vars_dataframe()) == 1221
