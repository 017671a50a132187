"""The market page: the model wrapper, the panels, and the page that puts them together.

The page is assembled from Mesa's ``SolaraViz`` parts rather than the whole
``SolaraViz``: its ``update_counter``, and run controls that look and act
as Mesa's ``ModelController`` (Reset, ▶/❚❚, Step, with the play and render
intervals) but keep the play interval (:mod:`market.view.controls`). The
rest of ``SolaraViz`` is replaced because its sliders do not show their values, its inputs cannot
make a number field or a list with one weight per registered strategy, and
its panel tabs read "Page 0". Mesa's Altair plot component
(``make_plot_component(..., backend="altair")``) is not used either: each
such component reads ``update_counter`` itself, and in this Solara every
reader of a changed value costs a render pass over the whole page, on top
of Altair's own validation (``run.py bench --only view`` times it against
this page's chart: about 4x slower for the same deals chart).

One component (:func:`MarketMain`) reads the counter and hands it down, so a
step is one render pass; every panel draws a Vega-Lite chart from
:mod:`market.view.figures`, which the browser renders, so a step costs the
server the model's step plus a few small JSON specifications.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np
import solara
from mesa.visualization.utils import update_counter

from market.game.play import Ranges, fmt
from market.game.rules import SIDE_NAMES
from market.sim.model import MarketModel
from market.view import figures as vf
from market.view import pair_figures as pf
from market.view import partner_figures
from market.view.chart import Chart
from market.view.controls import MarketSidebar, RunBar
from market.view.settings import default_settings, model_kwargs
from strategies.qlearning import QLearning


class ViewMarket(MarketModel):
    """:class:`MarketModel` as the page builds it, plus this period's trade prices.

    Takes :class:`MarketModel`'s own keyword arguments (Mesa's Reset calls
    ``ViewMarket(**kwargs)``) and keeps them in ``built_with``, so the page
    can tell whether the sidebar has changed since the model was built.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.built_with = dict(kwargs)
        #: prices of the deals made so far in the current trading period, in order
        self.period_trades: list[float] = []
        #: on a book, each step of the current period: its best bid and ask at its end and
        #: its trade prices
        self.period_book: list[dict[str, Any]] = []

    def step(self) -> None:
        super().step()
        if self.step_in_period == 1:  # this step opened a new period
            self.period_trades = []
            self.period_book = []
        pairs = self.last_step.frame()
        prices = pairs.loc[pairs["level"] > 0, "price"].tolist()
        self.period_trades.extend(prices)
        if self.market.book is not None:
            bid, ask = self.market.best_quotes()
            grid = self.market.grid
            self.period_book.append({
                "step": self.step_in_period, "trades": prices,
                "bid": float(grid.price(bid)) if bid else math.nan,
                "ask": float(grid.price(ask)) if ask else math.nan})


def default_model() -> ViewMarket:
    """The market the page starts with (:data:`market.view.settings.DEFAULTS`)."""
    return ViewMarket(**model_kwargs(default_settings()))


# --- panels -------------------------------------------------------------------------------------
def _yes(flag: Any) -> str:
    return "on" if flag else "off"


def summary_items(model: MarketModel) -> list[str]:
    """What the market is and where it stands, as lines of text (the page's summary)."""
    s, p, pr = model.summary(), model.params, model.market.protocol
    eq = model.ledger.equilibrium
    mixes = [
        f"{side}s: " + ", ".join(f"{name} {share:.0%}" for name, share
                                 in (p.seller_mix, p.buyer_mix)[i].items())
        for i, side in enumerate(SIDE_NAMES)
    ]
    mean = "no deal yet" if math.isnan(s["mean_price"]) else f"{s['mean_price']:.2f}"
    eff = ("n/a before a step" if model.steps == 0 or math.isnan(s["efficiency"])
           else f"{s['efficiency']:.1%}")
    band = (f"{eq.price_lo:.2f}-{eq.price_hi:.2f}" if np.isfinite(eq.price_lo) else "none")
    built = getattr(model, "built_with", {})
    return [
        f"deals so far: {int(s['deals'])}; mean price {mean}; allocative efficiency {eff}",
        f"competitive band {band}, quantity {eq.quantity} per period",
        f"{mixes[0]}; {mixes[1]}",
        f"{len(model.sellers)} sellers, {len(model.buyers)} buyers; "
        f"P = {p.prices} price levels, T = {p.rounds} rounds; "
        f"trading period {p.period} steps; "
        + (f"first mover: {p.first}" if model.market.institution.bilateral else
           f"institution: {model.market.institution.words}")
        + (f"; discount per offer: Seller {pr.seller_discount:g}, Buyer "
           f"{pr.buyer_discount:g}" if pr.discounted else ""),
        (f"values and costs: the schedule {p.schedule}" if p.schedule != "drawn" else
         f"values drawn {p.value_dist} in {p.value_range[0]:g}-{p.value_range[1]:g}, costs "
         f"{p.cost_dist} in {p.cost_range[0]:g}-{p.cost_range[1]:g}"),
        f"new values each period: {_yes(p.redraw)}; market clock: {_yes(p.clock)}; "
        f"teams: {p.teams or 'none'}; common wallet: {_yes(p.common_wallet)}; "
        f"seed {built.get('seed')}",
        *([f"strategy revision: {p.revision}, rate {p.revision_rate:.2f}, selection "
           f"{p.selection:.2f}, mutation {p.mutation:.2f}, adopted learners {p.inherit}"]
          if p.revision != "none" else []),
        *([f"partner choice: {p.matching}, beta {p.loyalty_beta:.2f}, gamma "
           f"{p.loyalty_gamma:.2f}, memory {p.loyalty_memory}, service {p.service}"
           + ("; learners see loyalty" if p.loyal_state else "")]
          if model.market.partners.loyalty else []),
    ]


@solara.component
def SummaryPanel(model: MarketModel, tick: int = 0) -> None:
    """Where the market stands: period, deals, prices against the band, and every setting."""
    items = "".join(f"<li>{escape(i)}</li>" for i in summary_items(model))
    html = (
        f"<p style='margin: 0'><b>Step {model.steps}</b>, trading period {model.period + 1} "
        f"(step {model.step_in_period} of {model.params.period})</p>"
        f"<ul style='margin: 4px 0'>{items}</ul>"
    )
    solara.HTML(tag="div", unsafe_innerHTML=html, classes=["market-summary"])


@solara.component
def PricesPanel(model: MarketModel, tick: int = 0) -> None:
    Chart(vf.prices_chart(model.datacollector.get_model_vars_dataframe(), model.market.grid))


@solara.component
def DealsPanel(model: MarketModel, tick: int = 0) -> None:
    Chart(vf.deals_chart(model.datacollector.get_model_vars_dataframe(),
                         model.market.institution.bilateral))


@solara.component
def EarningsPanel(model: MarketModel, tick: int = 0) -> None:
    Chart(vf.earnings_chart(model.summary(), model.steps))


@solara.component
def SharesPanel(model: MarketModel, tick: int = 0) -> None:
    Chart(vf.shares_chart(model.datacollector.get_model_vars_dataframe()))


@solara.component
def BookPanel(model: MarketModel, tick: int = 0) -> None:
    """A double auction's or call market's period: best bid and ask after each step, and
    the trade prices."""
    Chart(vf.book_chart(getattr(model, "period_book", []), model.market.grid,
                        model.market.institution.chart, model.period))


@solara.component
def NetworkPanel(model: MarketModel, tick: int = 0) -> None:
    """Under partner choice: who prefers whom
    (:func:`market.view.partner_figures.network_chart`)."""
    arrays = model.market.partners.arrays
    Chart(partner_figures.network_chart(arrays[0], arrays[1], len(model.sellers), model.period))


@solara.component
def LoyaltyPanel(model: MarketModel, tick: int = 0) -> None:
    """Under partner choice: the Buyers' order parameter
    (:func:`market.view.partner_figures.y_chart`)."""
    Chart(partner_figures.y_chart(model.market.partners.arrays[1], len(model.sellers),
                                  model.period))


@solara.component
def SupplyDemandPanel(model: MarketModel, tick: int = 0) -> None:
    trades = getattr(model, "period_trades", [])
    Chart(vf.supply_demand_chart(model.buyers.reservation, model.sellers.reservation, trades,
                                 model.market.grid,
                                               model.period))


def pair_ranges(trace: Any) -> Ranges:
    """A market pair's acceptable prices: Seller from its cost up, Buyer up to its value."""
    grid = trace.grid
    return Ranges(
        buyer=(grid.lo, trace.buyer.value),
        seller=(trace.seller.cost, grid.hi),
    )


def trace_title(trace: Any) -> str:
    s, b = trace.seller, trace.buyer
    return (f"seller #{s.unique_id} ({s.strategy}, cost {fmt(round(s.cost, 1))}) vs "
            f"buyer #{b.unique_id} ({b.strategy}, value {fmt(round(b.value, 1))})")


@solara.component
def TracePanel(model: MarketModel, tick: int = 0) -> None:
    """The negotiation of one pair of the last step, in the legacy view; pick the pair."""
    pair, set_pair = solara.use_state(0)
    n = len(model.last_step)
    if n == 0:
        Chart(vf.note_chart("no pair negotiated yet: press Step or ▶",
                                          "A negotiation of the last step"))
        return
    pair = min(pair, n - 1)
    deals = np.flatnonzero(model.last_step.frame()["level"].to_numpy() > 0)
    trace = model.last_step.trace(pair)
    with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):  # narrow: wrap
        with solara.Column(style={"min-width": "240px"}):
            solara.SliderInt(f"Pair {pair + 1} of {n} in the last step", value=pair, min=0,
                             max=n - 1, on_value=set_pair)
        solara.Button("first deal", disabled=deals.size == 0, text=True,
                      on_click=lambda: set_pair(int(deals[0])))
        solara.HTML(tag="div", unsafe_innerHTML=pf.banner_html(trace.record, trace.grid))
    Chart(pf.negotiation_chart(trace.record, trace.grid, pair_ranges(trace),
                                             rounds=model.market.protocol.rounds,
                                             title=trace_title(trace)))


def learner_tables(model: MarketModel) -> list[tuple[str, QLearning, int]]:
    """(side, Q-learning population, most-learned member) for each side that has learners."""
    out = []
    for side in range(2):
        counts = np.bincount(model.market.books[side].strategy,
                             minlength=len(model.market.names[side]))
        for idx, strat in enumerate(model.market.strategies[side]):
            if isinstance(strat, QLearning) and counts[idx] > 0:
                learned = np.abs(strat.tables).reshape(strat.n_members, -1).sum(axis=1)
                out.append((SIDE_NAMES[side], strat, int(np.argmax(learned))))
    return out


def qtable_panels(strat: QLearning, member: int) -> list[tuple[str, np.ndarray]]:
    """The member's tables to draw: one per role (with the clock, the last time slot; with
    ``loyal_state``, two per role: pairs with a loyal Buyer and the others), in the slots'
    order (``(role * buckets + bucket) * loyalty_slots + loyal``, :mod:`strategies.qlearning`)."""
    tables = strat.tables[member]
    buckets = int(getattr(strat, "buckets", 1))
    loyal = 2 if getattr(strat, "loyal_state", False) else 1
    roles = tables.shape[0] // (buckets * loyal)
    names = ["moved first", "moved second"] if roles == 2 else ["any role"]
    kinds = [", other pairs", ", loyal pairs"] if loyal == 2 else [""]
    return [(names[r] + kinds[k], tables[(r * buckets + buckets - 1) * loyal + k])
            for r in range(roles) for k in range(loyal)]


@solara.component
def QTablePanel(model: MarketModel, tick: int = 0) -> None:
    """Heatmap of a learning trader's Q-table, or a note when nobody learns."""
    found = learner_tables(model)
    choice, set_choice = solara.use_state("seller")
    title = "A learner's Q-table"
    if not found:
        Chart(vf.note_chart(
            "no trader in this market learns: give qlearning a weight, then Reset", title))
        return
    sides = [f[0] for f in found]
    if choice not in sides:
        choice = sides[0]
    if len(sides) > 1:
        solara.ToggleButtonsSingle(value=choice, values=sides, on_value=set_choice, dense=True)
    side, strat, member = found[sides.index(choice)]
    played = int(strat.played[member])
    title = (f"{side} learner {member} of {strat.n_members} (the most learned), "
             f"{played} negotiations played")
    Chart(pf.qtable_chart(qtable_panels(strat, member), model.market.protocol,
                                        title=title))


#: the panels below the summary, two per row
PANELS = [
    PricesPanel,
    DealsPanel,
    EarningsPanel,
    SupplyDemandPanel,
    TracePanel,
    QTablePanel,
]


@solara.component
def MarketMain(
    model: solara.Reactive[ViewMarket],
    params: solara.Reactive[dict[str, Any]],
    settings: solara.Reactive[dict[str, Any]],
    play_interval: solara.Reactive[int],
    render_interval: solara.Reactive[int],
) -> None:
    """The run bar, the summary, then the six panels in a two-column grid (and the book on a
    double auction or call market, the strategy shares when traders revise, the loyalty
    network and the Buyers' order parameter under partner choice).

    The controller bumps Mesa's ``update_counter`` after each step (or render
    interval). Only this component reads it and hands the count down as
    ``tick``: Solara makes one render pass over the whole page per reader of
    a changed value, so one reader keeps a step to one pass.
    """
    tick = update_counter.get()
    m = model.value
    with solara.Column(gap="10px"):
        RunBar(model, params, settings, play_interval, render_interval, m.steps)
        with solara.Card(margin=0):
            SummaryPanel(m, tick)
        with solara.GridFixed(columns=2, column_gap="10px", row_gap="10px"):
            extra = ([BookPanel] if m.market.book is not None else []) + (
                [SharesPanel] if m.params.revision != "none" else []) + (
                [NetworkPanel, LoyaltyPanel] if m.market.partners.loyalty else [])
            for panel in [*PANELS, *extra]:
                with solara.Card(margin=0, style={"overflow-x": "auto"}):
                    panel(m, tick)


@solara.component
def MarketPage(start: dict[str, Any] | None = None) -> None:
    """The market page: settings in the sidebar, run bar and panels; one model per session.

    ``start``: settings to begin with instead of the defaults (the bench's larger market).
    """
    first = solara.use_memo(lambda: {**default_settings(), **(start or {})}, [])
    initial = solara.use_memo(lambda: ViewMarket(**model_kwargs(first)), [])
    model = solara.use_reactive(initial)
    settings = solara.use_reactive(first)
    params = solara.use_reactive(dict(initial.built_with))
    play_interval = solara.use_reactive(100)
    render_interval = solara.use_reactive(1)

    with solara.AppBar():
        solara.AppBarTitle("Negotiation market")
    with solara.Sidebar():
        MarketSidebar(params, settings)
    MarketMain(model, params, settings, play_interval, render_interval)


__all__ = [
    "PANELS",
    "MarketPage",
    "ViewMarket",
    "default_model",
    "learner_tables",
    "pair_ranges",
    "qtable_panels",
    "summary_items",
]
