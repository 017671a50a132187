"""The panels' charts: valid Vega-Lite, and they show the model's own numbers."""

from __future__ import annotations

import json
import math

import jsonschema
import numpy as np
import pytest
from altair.vegalite.v6.schema.core import load_schema

from market.game import qtable
from market.game.rules import Protocol
from market.view import figures as vf
from market.view import pair_figures as pf
from market.view.components import (
    ViewMarket,
    default_model,
    learner_tables,
    pair_ranges,
    qtable_panels,
)
from market.view.settings import default_settings, model_kwargs
from market.view.terminal import DEAL_BANNER, NO_DEAL_BANNER
from market.view.two_agent import setup_game


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft7Validator(load_schema())


@pytest.fixture(scope="module")
def stepped():
    """The page's default market after twelve steps (into its second period)."""
    m = default_model()
    for _ in range(12):
        m.step()
    return m


def layer(spec, name):
    """The layer (or concatenated view) called ``name``, wherever it sits in the spec."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("name") == name:
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    assert len(found) == 1, f"{name}: {len(found)} found"
    return found[0]


def values(spec, name, field):
    node = layer(spec, name)
    return [row[field] for row in node.get("data", {}).get("values", [])]


def all_specs(m):
    trace = m.last_step.trace(0)
    side, strat, member = learner_tables(m)[0]
    return {
        "prices": vf.prices_chart(m.datacollector.get_model_vars_dataframe(), m.market.grid),
        "deals": vf.deals_chart(m.datacollector.get_model_vars_dataframe()),
        "earnings": vf.earnings_chart(m.summary(), m.steps),
        "supply": vf.supply_demand_chart(m.buyers.reservation, m.sellers.reservation,
                                         m.period_trades, m.market.grid, m.period),
        "negotiation": pf.negotiation_chart(trace.record, trace.grid, pair_ranges(trace)),
        "qtable": pf.qtable_chart(qtable_panels(strat, member), m.market.protocol, title=side),
        "note": vf.note_chart("nothing yet", "a title"),
    }


def test_every_chart_is_valid_vega_lite_and_plain_json(validator, stepped):
    for name, spec in all_specs(stepped).items():
        errors = [e.message for e in validator.iter_errors(spec)]
        assert not errors, (name, errors[:3])
        text = json.dumps(spec, allow_nan=False)  # no NaN: JSON has none, the browser would choke
        assert "Open in Vega Editor" not in text and spec["usermeta"]["embedOptions"] == {
            "actions": False, "renderer": "svg"}
    assert list(validator.iter_errors({"mark": "no-such-mark"}))  # the check can fail


def test_before_the_first_step_the_charts_say_so():
    m = default_model()
    df = m.datacollector.get_model_vars_dataframe()
    for spec in (vf.prices_chart(df, m.market.grid), vf.deals_chart(df),
                 vf.earnings_chart(m.summary(), m.steps)):
        assert spec["data"]["values"] == [{"text": "no step yet: press Step or ▶"}]


def test_prices_chart_shows_mean_prices_against_the_band(stepped):
    df = stepped.datacollector.get_model_vars_dataframe()
    d = df[df["step"] > 0]
    spec = vf.prices_chart(df, stepped.market.grid)
    rows = spec["data"]["values"]
    assert [r["step"] for r in rows] == d["step"].tolist()
    means = [r["mean"] for r in rows]
    expect = d["mean_price"].tolist()
    assert [None if math.isnan(x) else x for x in expect] == means  # no deal: a gap, not 0
    assert [r["lo"] for r in rows] == d["ce_price_lo"].tolist()
    assert layer(spec, "competitive band")["mark"]["type"] == "area"


def test_deals_chart_counts_pairs_deals_and_efficiency(stepped):
    df = stepped.datacollector.get_model_vars_dataframe()
    d = df[df["step"] > 0]
    rows = vf.deals_chart(df)["data"]["values"]
    for measure in ("pairs", "deals", "efficiency"):
        got = [r["value"] for r in rows if r["measure"] == measure]
        assert got == pytest.approx(d[measure].tolist())
    book = vf.deals_chart(df, bilateral=False)  # a book has trades, not pairs that met
    assert {r["measure"] for r in book["data"]["values"]} == {"deals", "efficiency"}
    assert book["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["deals", "efficiency"]


def test_earnings_by_strategy_and_by_team():
    m = ViewMarket(**model_kwargs({**default_settings(), "teams": 2, "common_wallet": True}))
    for _ in range(5):
        m.step()
    spec = vf.earnings_chart(m.summary(), m.steps)
    s = m.summary()
    by_strategy = dict(zip(values(spec, "strategy", "label"), values(spec, "strategy", "value"),
                           strict=True))
    assert by_strategy == pytest.approx({"seller: averaging": s["earnings.seller.averaging"],
                                         "seller: qlearning": s["earnings.seller.qlearning"],
                                         "buyer: averaging": s["earnings.buyer.averaging"]})
    teams = dict(zip(values(spec, "team", "label"), values(spec, "team", "value"), strict=True))
    assert teams == pytest.approx({f"{side} team {t}": s[f"earnings.team.{side}.{t}"]
                                   for side in ("seller", "buyer") for t in (0, 1)})


def test_supply_and_demand_with_this_periods_trades(stepped):
    m = stepped
    spec = vf.supply_demand_chart(m.buyers.reservation, m.sellers.reservation, m.period_trades,
                                  m.market.grid, m.period)
    assert values(spec, "trades", "price") == pytest.approx(m.period_trades)
    demand = [r["price"] for r in layer(spec, "curves")["data"]["values"]
              if r["curve"] == "demand (values)"]
    assert demand[0] == pytest.approx(m.buyers.reservation.max())
    assert demand == sorted(demand, reverse=True)
    assert values(spec, "band", "lo") == pytest.approx([m.ledger.equilibrium.price_lo])
    assert "period 2" in spec["title"]["text"]


@pytest.mark.parametrize("institution", ["cda", "call"])
def test_the_book_chart_shows_the_periods_best_quotes_and_trades(validator, institution):
    settings = {**default_settings(), "institution": institution,
                "seller_weights": {"zi-c": 100}, "buyer_weights": {"zi-c": 100}}
    m = ViewMarket(**model_kwargs(settings))
    for _ in range(14):
        m.step()
    spec = vf.book_chart(m.period_book, m.market.grid, institution, m.period)
    assert not list(validator.iter_errors(spec))
    json.dumps(spec, allow_nan=False)
    assert values(spec, "trades", "price") == pytest.approx(m.period_trades)
    assert [r["step"] for r in m.period_book] == [1, 2, 3, 4]  # period 2, four steps in
    quotes = {(r["step"], r["what"]): r["price"] for r in layer(spec, "quotes")["data"]["values"]}
    for (step, what), price in quotes.items():
        if what == "best bid" and (step, "best ask") in quotes:
            assert price < quotes[(step, "best ask")]  # a crossing quote trades at once
    assert spec["title"]["text"].startswith("Period 2:")


def test_negotiation_chart_draws_ranges_offers_and_the_path():
    game = setup_game()  # the legacy numbers: a deal at 32
    full = pf.negotiation_chart(game.record, game.grid, game.ranges, rounds=10)
    ranges = layer(full, "ranges")["data"]["values"]
    assert [(r["lane"], r["lo"], r["hi"]) for r in ranges] == [("BUYER", 0.0, 80.0),
                                                               ("SELLER", 20.0, 100.0)]
    assert values(full, "accept label", "text") == ["seller accepts 32"]
    assert "DEAL at 32" in full["vconcat"][0]["title"]["text"][-1]

    partial = pf.negotiation_chart(game.record, game.grid, game.ranges, shown=3, rounds=10)
    path = layer(partial, "path")["data"]["values"]
    assert [(p["side"], p["price"], p["round"]) for p in path] == [
        ("buyer", 0.0, 1), ("seller", 50.0, 1), ("buyer", 25.0, 2)]
    assert values(partial, "offers", "price") == [25.0, 50.0]  # each side's standing offer
    assert "round 2 of 10" in partial["vconcat"][0]["title"]["text"][-1]
    assert layer(partial, "accept")["data"]["values"] == []  # not shown yet (the layer stays,
    # so the page updates the chart's data instead of drawing it anew)


def test_banners_use_the_readable_colours():
    deal = setup_game()
    html = pf.banner_html(deal.record, deal.grid)
    assert "DEAL at 32" in html
    assert f"color: {DEAL_BANNER[0]}; background-color: {DEAL_BANNER[1]}" in html
    none = setup_game(seller_range=(90, 100), buyer_range=(0, 10))
    assert not none.record.deal
    html = pf.banner_html(none.record, none.grid)
    assert "NO DEAL" in html
    assert f"color: {NO_DEAL_BANNER[0]}; background-color: {NO_DEAL_BANNER[1]}" in html


def test_relative_q_scales_each_state_and_blanks_the_untrained():
    table = np.array([[0.0, 0.2, 0.4, 0.0], [5.0, 0.0, 1.0, 3.0], [0.0, 0.0, 0.0, 0.0]])
    blank = table == 0.0
    rel = pf.relative_q(table, blank)
    np.testing.assert_allclose(rel[0], [np.nan, 0.0, 1.0, np.nan])
    np.testing.assert_allclose(rel[1], [1.0, np.nan, 0.0, 0.5])
    assert np.isnan(rel[2]).all()
    one = pf.relative_q(np.array([[0.0, 0.3]]), np.array([[True, False]]))
    np.testing.assert_allclose(one, [[np.nan, 1.0]])


def test_a_learner_that_sees_loyalty_shows_its_loyal_and_other_pairs_tables():
    from market.sim.model import MarketModel

    m = MarketModel(n_sellers=10, n_buyers=10, matching="loyalty", loyal_state=True,
                    seller_mix={"qlearning": 1.0}, seed=3)
    m.run(20)
    side, strat, member = learner_tables(m)[0]
    panels = qtable_panels(strat, member)
    assert [label for label, _ in panels] == [
        "moved first, other pairs", "moved first, loyal pairs",
        "moved second, other pairs", "moved second, loyal pairs"]
    for k, (_, table) in enumerate(panels):  # slot (role * buckets + bucket) * 2 + loyal
        assert np.array_equal(table, strat.tables[member][k])


def test_qtable_heatmap_labels_states_and_shows_learned_cells(stepped):
    side, strat, member = learner_tables(stepped)[0]
    assert side == "seller"
    panels = qtable_panels(strat, member)
    assert [label for label, _ in panels] == ["moved first", "moved second"]
    spec = pf.qtable_chart(panels, stepped.market.protocol)
    first = layer(spec, "moved first")
    table = strat.tables[member, 0]
    learned = ~qtable.untrained(table, stepped.market.protocol)
    assert learned.any()
    rows = first["data"]["values"]
    assert len(rows) == int(learned.sum())  # untrained cells are not drawn: blank
    labels = qtable.row_labels(stepped.market.protocol)
    assert first["encoding"]["y"]["scale"]["domain"] == labels  # s, 1.0 .. 5.4, d
    assert labels[:3] == ["s", "1.0", "2.0"] and labels[-1] == "d"
    best = {}
    for r in rows:  # per state, the largest Q is drawn at 1
        best.setdefault(r["state"], []).append((r["q"], r["rel"]))
    for cells in best.values():
        assert max(cells)[1] == pytest.approx(1.0)


def test_qtable_heatmap_of_a_table_with_learning_everywhere():
    protocol = Protocol(3, 2)
    legal = qtable.legal_rows(protocol)
    table = np.where(legal, np.arange(legal.size).reshape(legal.shape) / 10.0 + 0.1, 0.0)
    spec = pf.qtable_chart([("any role", table)], protocol)
    rows = spec["data"]["values"]
    assert len(rows) == int(legal.sum())
    assert {r["state"] for r in rows} == set(qtable.row_labels(protocol)) - {"d"}


@pytest.mark.parametrize("earned", [[8600.0, 120.0], [-297.0, 50.0], [0.0], [-5.0],
                                    [1_234_567.89, -0.5], [3.0, 3.0, 3.0]])
def test_each_value_written_past_its_bar_stays_inside_the_chart(earned):
    """The longest bar's value was cut at the chart's edge ("8,6"): an 11-pixel digit is
    about 6.1 pixels wide, so each label, 3 pixels past its bar's end, must fit."""
    rows = [{"value": v} for v in earned]
    width = vf.WIDTH - 120
    lo, hi = vf.label_room(rows, width)
    for v in earned:
        at = (v - lo) / (hi - lo) * width
        wide = 3 + 6.1 * len(f"{v:,.2f}")
        assert (at + wide <= width) if v >= 0 else (at - wide >= 0), (v, lo, hi)
