"""The ledger: period and run totals, the one function of figures, earnings, adding a metric."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from settled import Settled  # tests/support, on pytest's pythonpath

from market.sim import ledger
from market.sim.ledger import Ledger, Metric
from market.sim.model import MarketModel
from market.sim.yardsticks import Equilibrium

MIXED = {"averaging": 0.5, "qlearning": 0.5}



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


def _settlement(rng: np.random.Generator, pairs: int) -> Settled:
    deal = rng.random(pairs) < 0.6
    prices = np.where(deal, rng.uniform(20, 80, pairs), np.nan)
    n = int(deal.sum())
    return Settled(deal, prices, rng.uniform(0, 30, n), rng.uniform(0, 30, n),
                      rng.uniform(0, 60, n), rng.uniform(40, 100, n))


def test_one_entry_keeps_the_period_and_the_run():
    rng = np.random.default_rng(3)
    book = Ledger()
    first, second = Equilibrium(10, 40.0, 45.0, 500.0), Equilibrium(12, 41.0, 44.0, 600.0)
    book.open_period(first)
    a, b = _settlement(rng, 40), _settlement(rng, 25)
    book.enter(a.sums(book.equilibrium.price_mid))
    book.enter(b.sums(book.equilibrium.price_mid))
    assert book.period == book.run  # the same entries, one period so far
    prices = np.concatenate([a.deal_prices, b.deal_prices])
    gains = [np.concatenate([a.seller_gain, b.seller_gain]),
             np.concatenate([a.buyer_gain, b.buyer_gain])]
    fig = book.period_figures()
    assert fig["deals"] == prices.size and isinstance(fig["deals"], int)
    assert fig["mean_price"] == pytest.approx(prices.mean())
    assert fig["price_std"] == pytest.approx(prices.std())
    assert fig["seller_surplus"] == pytest.approx(gains[0].sum())
    assert fig["realised_surplus"] == pytest.approx(gains[0].sum() + gains[1].sum())
    assert fig["efficiency"] == pytest.approx(fig["realised_surplus"] / 500.0)
    assert fig["buyer_share"] + fig["seller_share"] == pytest.approx(1.0)
    assert (fig["ce_price_lo"], fig["ce_quantity"]) == (40.0, 10)
    # against the competitive price 42.5: Smith's alpha, and the deals of traders left out
    costs, values = (np.concatenate([a.costs, b.costs]), np.concatenate([a.values, b.values]))
    rmsd = np.sqrt(np.mean((prices - 42.5) ** 2))
    assert fig["price_rmsd"] == pytest.approx(rmsd)
    assert fig["alpha"] == pytest.approx(100 * rmsd / 42.5)
    assert fig["extramarginal"] == int(((values < 42.5) | (costs > 42.5)).sum()) > 0

    book.open_period(second)  # a new period: its totals start again, the run's go on
    c = _settlement(rng, 30)
    book.enter(c.sums(book.equilibrium.price_mid))
    assert book.period.deals == int(c.deal.sum())
    assert book.run.deals == prices.size + int(c.deal.sum())
    run = book.run_figures()
    assert run["max_surplus"] == 1100.0 and run["ce_price_lo"] == 41.0  # yardstick: this period
    assert run["efficiency"] == pytest.approx(run["realised_surplus"] / 1100.0)
    assert all(isinstance(v, float) for v in run.values())


def test_no_deal_leaves_prices_and_shares_undefined():
    book = Ledger()
    book.open_period(Equilibrium(0, 30.0, 35.0, 0.0))
    fig = book.period_figures()
    assert fig["deals"] == 0 and math.isnan(fig["mean_price"]) and math.isnan(fig["price_std"])
    assert math.isnan(fig["efficiency"]) and math.isnan(fig["buyer_share"])


def test_every_output_lists_the_figures_in_its_order():
    model = MarketModel(n_buyers=10, n_sellers=10, period=2, seed=1)
    for _ in range(4):
        model.step()
    keys = ledger.keys()
    periods = model.datacollector.get_table_dataframe("periods")
    assert list(periods.columns) == ["period", "last_step", *keys]
    summary = list(model.summary())
    assert summary[:2] == ["steps", "periods"]
    assert summary[2:2 + len(keys)] == [*ledger.SUMMARY_ORDER,
                                        *(k for k in keys if k not in ledger.SUMMARY_ORDER)]
    step_vars = list(model.datacollector.get_model_vars_dataframe().columns)
    assert step_vars[:9] == ["step", "period", "pairs", "deals", "mean_price", "min_price",
                             "max_price", "price_std", "period_deals"]
    assert step_vars[9:9 + len(keys) - 3] == keys[3:]  # the period so far


def test_a_closed_period_is_its_last_steps_period_so_far_and_the_run_adds_them_up():
    model = MarketModel(n_buyers=30, n_sellers=25, buyer_mix=MIXED, period=4, seed=6)
    for _ in range(12):
        model.step()
    periods = model.datacollector.get_table_dataframe("periods")
    steps = model.datacollector.get_model_vars_dataframe().set_index("step")
    for _, row in periods.iterrows():
        last = steps.loc[row["last_step"]]
        assert last["period_deals"] == row["deals"]
        for k in ("realised_surplus", "efficiency", "buyer_share", "ce_price_lo", "max_surplus"):
            assert last[k] == row[k] or (math.isnan(last[k]) and math.isnan(row[k]))
    s = model.summary()
    assert s["deals"] == periods["deals"].sum()
    assert s["realised_surplus"] == pytest.approx(periods["realised_surplus"].sum())
    assert s["max_surplus"] == pytest.approx(periods["max_surplus"].sum())


def test_earnings_per_strategy_are_the_agents_means():
    model = MarketModel(n_buyers=20, n_sellers=16, buyer_mix=MIXED,
                        seller_mix={"zi-c": 0.5, "averaging": 0.5}, seed=4)
    for _ in range(10):
        model.step()
    s = model.summary()
    means = model.market.agents_now().groupby(["side", "strategy"])["earnings"].mean()
    for (side, name), mean in means.items():
        assert s[f"earnings.{side}.{name}"] == pytest.approx(mean)
    assert s["earnings.buyer"] == pytest.approx(model.buyers.earnings.mean())
    assert not [k for k in s if k.startswith("earnings.team.")]  # no teams, no team figures


# --- the extension point ---------------------------------------------------------------------
def test_a_metric_added_in_one_place_reaches_every_output(monkeypatch, capsys, tmp_path):
    """One :class:`Metric` appended to :data:`METRICS`, and nothing else: it is collected per
    step, in the periods table and the summary, printed and in ``--json`` by ``run.py market``,
    a column of the ``run.py batch`` table and a panel of ``run.py plot``."""
    import market.files
    from market.cli import main
    from market.plots.results import plot_results
    from market.runs import batch

    extra = Metric("surplus_per_deal", lambda t, eq: ledger._mean(t.realised, t.deals),
                   "surplus per deal", show=True, plot=3)
    monkeypatch.setattr(ledger, "METRICS", [*ledger.METRICS, extra])

    # the DataCollector, the periods table, summary()
    model = MarketModel(n_buyers=12, n_sellers=12, period=3, seed=0)
    for _ in range(6):
        model.step()
    s = model.summary()
    assert s["surplus_per_deal"] == pytest.approx(s["realised_surplus"] / s["deals"])
    assert "surplus_per_deal" in model.datacollector.get_model_vars_dataframe().columns
    assert model.datacollector.get_table_dataframe("periods")["surplus_per_deal"].notna().all()

    # run.py market: --json and the printed table
    args = ["market", "--buyers", "12", "--sellers", "12", "--steps", "6", "--seed", "0"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = out["summary"]
    assert got["surplus_per_deal"] == pytest.approx(got["realised_surplus"] / got["deals"])
    assert main(args) == 0
    assert "surplus per deal" in capsys.readouterr().out

    # run.py batch: a column of the results table
    grid = batch.validate_grid({"n_buyers": [6, 8], "n_sellers": [6]})
    res = batch.run_batch(batch.expand(grid, 2, 1, 6), tmp_path / "r.parquet", processes=1)
    table = pd.read_parquet(tmp_path / "r.parquet")
    assert table["surplus_per_deal"].notna().all()
    assert "surplus_per_deal" in res.table.attrs["batch"]["metrics"]

    # run.py plot: a third panel beside efficiency and mean price
    drawn: list[list[str]] = []
    import market.plots.results

    save = market.files.save_figure

    def spy(fig, path):
        drawn.append([ax.get_ylabel() for ax in fig.axes])
        return save(fig, path)

    monkeypatch.setattr(market.plots.results, "save_figure", spy)
    files = plot_results(tmp_path / "r.parquet", tmp_path / "plots")
    assert [f.name for f in files] == ["n_buyers_market.png"]
    assert drawn == [["allocative efficiency", "mean transaction price", "surplus per deal"]]
