"""The market page without a browser: the model wrapper, the panels, and the page rendered
in-process (Mesa's controller, the sidebar's settings, Reset)."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.game.rules import SELLER
from market.view import figures as vf
from market.view import pair_figures as pf
from market.view.components import (
    MarketPage,
    ViewMarket,
    default_model,
    learner_tables,
    pair_ranges,
)
from market.view.settings import default_settings, model_kwargs


def _summary(page) -> str:
    return page.html()


# --- the model wrapper and the panels' data ------------------------------------------------------
def test_period_trades_are_this_periods_deals():
    m = ViewMarket(**model_kwargs({**default_settings(), "n_sellers": 30, "n_buyers": 30,
                                   "period": 3, "seed": 3}))
    for _ in range(5):  # into the second period
        m.step()
        frame = m.datacollector.get_model_vars_dataframe()
        assert len(m.period_trades) == int(frame["period_deals"].iloc[-1])
    assert m.period == 1
    assert m.built_with["n_sellers"] == 30  # what the model was built from, for "settings changed"


@pytest.mark.parametrize("name", strategies.names())
def test_every_registered_strategy_can_be_chosen_and_drawn(name):
    """Each strategy gets a weight control; given all of a side, it runs and its moves draw."""
    weights = {n: 0 for n in strategies.names()}
    s = {**default_settings(), "n_sellers": 12, "n_buyers": 12, "period": 2, "seed": 0,
         "seller_weights": {**weights, name: 100}, "buyer_weights": {**weights, name: 60,
                                                                     "qlearning": 40}}
    m = ViewMarket(**model_kwargs(s))
    assert m.market.names[SELLER] == [name]
    for _ in range(3):
        m.step()
    trace = m.last_step.trace(0)
    spec = pf.negotiation_chart(trace.record, trace.grid, pair_ranges(trace), rounds=5)
    path = next(layer for layer in spec["vconcat"][1]["layer"] if layer["name"] == "path")
    offers = [mv for mv in trace.record.moves if mv.action == "offer"]
    assert len(path["data"]["values"]) == len(offers)


def test_learner_tables_only_when_somebody_learns():
    m = default_model()
    for _ in range(4):
        m.step()
    (side, strat, member), = learner_tables(m)
    assert side == "seller" and np.abs(strat.tables[member]).sum() > 0
    nobody = ViewMarket(**model_kwargs({**default_settings(),
                                        "seller_weights": {"averaging": 100}}))
    assert learner_tables(nobody) == []


# --- the market page, rendered in-process --------------------------------------------------------
def test_market_page_steps_and_every_chart_redraws(render):
    page = render(MarketPage)
    assert "Step: 0" in page.texts()
    before = page.charts()
    assert len(before) == 6  # prices, deals, earnings, supply/demand, negotiation, Q-table
    for _ in range(2):
        page.click("Step")
    assert "Step: 2" in page.texts()
    after = page.charts()
    assert len(after) == 6 and all(a != b for a, b in zip(before, after, strict=True))
    assert "Step 2</b>, trading period 1" in _summary(page)
    assert any(t.startswith("Pair 1 of ") for t in [w.label for w in page.widgets()
                                                     if hasattr(w, "label") and w.label])


def test_render_interval_steps_several_times_per_click(render):
    page = render(MarketPage)
    page.slider("Render interval", 4)
    page.click("Step")
    assert "Step: 4" in page.texts()
    assert "Step 4</b>" in _summary(page)


def test_every_control_changes_the_model_after_reset(render):
    page = render(MarketPage)
    page.type_in("Sellers (1-1000)", "23")
    page.type_in("Buyers (1-1000)", "17")
    page.slider("Price levels P", 7)
    page.slider("Rounds T", 3)
    page.slider("Steps per trading period", 4)
    page.toggle("random", "buyer")
    page.slider("Teams per side", 2)
    for label in ("New values and costs each period", "Common wallet (teams pool their earnings)",
                  "Market clock (delay costs; learners see the time left)"):
        page.tick(label)
    page.type_in("Seed", "99")
    page.slider("Seller's discount per offer", 0.9)
    page.slider("Buyer's discount per offer", 0.8)
    page.slider("averaging: 50", 0)       # sellers: averaging 50 -> 0
    page.slider("boulware: 0", 25)        # sellers: boulware 0 -> 25 (first of the two sides)
    assert "Settings changed: press Reset to apply them." in page.alerts()
    assert "50 sellers, 50 buyers" in _summary(page)  # nothing applies before Reset
    page.click("Reset")
    text = _summary(page)
    for needle in ("23 sellers, 17 buyers", "P = 7 price levels, T = 3 rounds",
                   "trading period 4 steps", "first mover: buyer", "new values each period: on",
                   "market clock: on", "teams: 2", "common wallet: on", "seed 99",
                   "sellers: boulware 33%, qlearning 67%",
                   "discount per offer: Seller 0.9, Buyer 0.8"):
        assert needle in text, needle
    page.click("Step")
    assert "Step: 1" in page.texts()


def test_values_and_costs_are_drawn_as_set_or_fixed_by_a_named_schedule(render):
    page = render(MarketPage)
    page.range_slider("Buyers' values: 0 to 100", (20, 150))
    page.toggle("uniform", "normal")
    page.click("Reset")
    assert "values drawn normal in 20-150, costs normal in 0-100" in _summary(page)
    page.toggle("drawn", "symmetric")  # the ranges and the shape are not asked for then
    import ipyvuetify as v

    assert page.widgets(v.RangeSlider) == []
    page.type_in("Sellers (1-1000)", "22")
    page.type_in("Buyers (1-1000)", "22")
    page.click("Reset")
    assert "values and costs: the schedule symmetric" in _summary(page)


def test_choosing_a_book_starts_it_with_zero_intelligence_traders_on_20_levels(render):
    """A book shows its character on the first click: Gode and Sunder's traders, not the
    page's averaging traders and learners on 5 levels (few deals on a level or two)."""
    page = render(MarketPage)
    page.toggle("pairs", "cda")
    assert any(t.startswith("Started with Gode and Sunder's") for t in page.texts())
    assert [s.label for s in page.sliders("zi-c:")] == ["zi-c: 100 → 100%"] * 2
    page.click("Reset")
    text = _summary(page)
    assert "allocative efficiency n/a before a step" in text  # not 0.0%
    assert "P = 20 price levels" in text and "institution: continuous double auction" in text
    assert "sellers: zi-c 100%" in text
    for _ in range(10):
        page.click("Step")
    assert "allocative efficiency 9" in _summary(page)  # 90% or more in the first period
    page.toggle("cda", "pairs")  # back: the page's own first market
    assert all(s.label.startswith("zi-c: 0 ") for s in page.sliders("zi-c:"))
    assert [s.label for s in page.sliders("Price levels P")] == ["Price levels P: 5"]


def test_each_strategys_weight_control_sets_its_share_on_each_side(render):
    page = render(MarketPage)
    names = strategies.names()
    for name in names:
        seller, buyer = page.sliders(f"{name}: ")  # the sellers' card comes first
        seller.v_model = 10
        buyer.v_model = 10
    page.click("Reset")
    share = f"{1 / len(names):.0%}"
    text = _summary(page)
    for side in ("sellers", "buyers"):
        expected = f"{side}: " + ", ".join(f"{name} {share}" for name in names)
        assert expected in text, (expected, text)


def test_all_zero_weights_are_refused_and_reset_keeps_the_last_valid_market(render):
    page = render(MarketPage)
    page.slider("averaging: 100", 0)  # the buyers' only strategy
    assert "Every buyer weight is 0" in page.alerts()
    assert "Not applied: buyer mix: every weight is 0" in page.alerts()
    page.click("Reset")
    assert "buyers: averaging 100%" in _summary(page)
    page.slider("averaging: 0", 10)
    page.type_in("Sellers (1-1000)", "5000")
    assert "Sellers must be an integer in [1, 1000]" in page.alerts()


def test_off_loopback_the_servers_debug_endpoint_answers_404():
    """Solara's /resourcez shows server statistics; served beyond this machine it is off."""
    import asyncio

    import solara.server.starlette as starlette_server

    from market.view import server

    server.hide_debug_endpoints()
    route = next(r for r in starlette_server.app.router.routes
                 if getattr(r, "path", None) == "/resourcez")
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/resourcez", "headers": [],
             "query_string": b"", "root_path": "", "path_params": {}}
    # in a thread of its own: other tests of this worker may leave an event loop running
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, route.handle(scope, receive, send)).result(timeout=30)
    assert sent[0]["status"] == 404


def test_strategy_revision_is_set_in_the_sidebar_and_its_shares_are_drawn(render):
    page = render(MarketPage)
    assert len(page.charts()) == 6  # no shares panel without revision
    page.toggle("none", "imitate")
    page.slider("Revising per period", 0.5)
    page.slider("Mutation", 0.1)
    page.slider("Steps per trading period", 2)
    page.click("Reset")
    assert "strategy revision: imitate, rate 0.50, selection 1.00, mutation 0.10" in _summary(
        page)
    for _ in range(3):
        page.click("Step")
    charts = page.charts()
    assert len(charts) == 7
    assert "Strategy shares per step" in str(charts[-1])


def test_the_institution_is_set_in_the_sidebar_and_the_book_is_drawn(render):
    page = render(MarketPage)
    page.toggle("pairs", "cda")  # the sellers' Q-learners quote on the book too
    page.click("Reset")
    assert "institution: continuous double auction" in _summary(page)
    for _ in range(3):
        page.click("Step")
    charts = page.charts()
    assert len(charts) == 7
    assert "the double auction's book" in str(charts[-1])


def test_the_shares_chart_stacks_each_side_s_strategies():
    model = ViewMarket(**model_kwargs({**default_settings(), "revision": "moran",
                                       "revision_rate": 0.5, "period": 2}))
    for _ in range(5):
        model.step()
    spec = vf.shares_chart(model.datacollector.get_model_vars_dataframe())
    rows = spec["data"]["values"]
    assert {r["side"] for r in rows} == {"seller", "buyer"}
    for step in {r["step"] for r in rows}:
        for side in ("seller", "buyer"):
            total = sum(r["share"] for r in rows if r["step"] == step and r["side"] == side)
            assert abs(total - 1) < 1e-9
    fresh = ViewMarket(**model_kwargs(default_settings()))
    none = vf.shares_chart(fresh.datacollector.get_model_vars_dataframe())
    assert "no strategy revision" in str(none)


def test_partner_choice_is_set_in_the_sidebar_and_its_network_and_y_are_drawn(render):
    page = render(MarketPage)
    page.toggle("random", "loyalty")
    page.slider("Choice intensity beta", 5.0)
    page.slider("Sellers a Buyer remembers", 8)
    page.toggle("random", "loyal-first")  # the service order, shown once loyalty is on
    page.tick("Q-learners see whether a Buyer is loyal")
    page.click("Reset")
    assert ("partner choice: loyalty, beta 5.00, gamma 0.10, memory 8, service loyal-first; "
            "learners see loyalty" in _summary(page))
    for _ in range(12):
        page.click("Step")
    charts = [str(c) for c in page.charts()]
    assert len(charts) == 8
    assert "who prefers whom" in charts[-2] and "Buyers' y" in charts[-1]


def test_the_loyalty_network_draws_each_remembered_seller_and_is_summarised_when_large():
    from market.view import partner_figures

    ids = np.array([[0, -1], [1, 0], [1, -1]])
    weight = np.array([[2.0, 0.0], [1.0, 0.5], [3.0, 0.0]])
    spec = partner_figures.network_chart(ids, weight, 2, 0)
    edges = spec["layer"][0]["data"]["values"]
    assert sorted((e["buyer"], e["seller"], e["J"]) for e in edges) == [
        (1, 1, 2.0), (2, 1, 0.5), (2, 2, 1.0), (3, 2, 3.0)]
    big = partner_figures.network_chart(np.repeat(ids, 200, 0), np.repeat(weight, 200, 0), 2, 0)
    bars = {r["customers"]: r["sellers"] for r in big["data"]["values"]}
    assert bars[200] == 1 and bars[400] == 1  # Seller 1 is 200 Buyers' favourite, Seller 2 400's
    ys = partner_figures.y_chart(weight, 2, 0)["data"]["values"]
    assert sum(r["buyers"] for r in ys) == 3


def test_a_book_institution_hides_time_pressure_and_partner_choice_and_drops_their_values(render):
    page = render(MarketPage)
    page.slider("Seller's discount per offer", 0.9)
    page.toggle("random", "loyalty")
    assert page.sliders("Seller's discount") and page.sliders("Choice intensity")
    page.toggle("pairs", "cda")
    assert not page.sliders("Seller's discount") and not page.sliders("Choice intensity")
    page.click("Reset")  # the hidden values do not reach the model (they would be refused)
    assert "institution: continuous double auction" in _summary(page)
    assert "partner choice" not in _summary(page)
