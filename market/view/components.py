"""The market page's model wrapper, controls and panels for Mesa's ``SolaraViz``.

Mesa's controls set one scalar per model keyword and rebuild the model on
*Reset* with ``type(model)(**params)``. :class:`ViewMarket` is therefore the
:class:`~market.sim.model.MarketModel` with flat keywords (two strategies and a
share per side instead of a mix dictionary) and one addition the view needs:
the prices of this period's trades, for the supply-and-demand panel. Every
panel is a Solara component reading the live model and drawing with
:mod:`market.view.figures`; Mesa's ``update_counter`` makes them redraw after
each step.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np
import solara
from mesa.visualization.user_param import Slider
from mesa.visualization.utils import update_counter

import strategies
from market.game.play import Ranges, fmt
from market.game.qtable import legal_rows
from market.game.rules import SIDE_NAMES
from market.sim.model import MarketModel
from market.view import figures as vf
from strategies.qlearning import QLearning

#: defaults of the page: sellers half averaging, half learning; buyers averaging
DEFAULTS: dict[str, Any] = dict(
    n_sellers=50,
    n_buyers=50,
    seller_strategy="averaging",
    seller_other="qlearning",
    seller_share=50,
    buyer_strategy="averaging",
    buyer_other="zi-c",
    buyer_share=100,
    prices=5,
    rounds=5,
    period=10,
    first="random",
    redraw=False,
    seed=42,
)


def mix_of(strategy: str, other: str, share: float) -> dict[str, float]:
    """``share`` percent of ``strategy``, the rest ``other`` (a one-strategy mix if equal)."""
    share = float(share)
    if not 0 <= share <= 100:
        raise ValueError(f"share must be a percentage in [0, 100] (got {share})")
    if strategy == other:
        return {strategy: 1.0}
    a = share / 100.0
    return {strategy: a, other: 1.0 - a}


class ViewMarket(MarketModel):
    """:class:`MarketModel` with the flat parameters Mesa's controls set, plus period trades.

    ``seller_strategy``/``seller_other``/``seller_share``: strategy A, strategy
    B and the percentage of Sellers playing A (likewise for Buyers).
    """

    def __init__(
        self,
        n_sellers: int = DEFAULTS["n_sellers"],
        n_buyers: int = DEFAULTS["n_buyers"],
        seller_strategy: str = DEFAULTS["seller_strategy"],
        seller_other: str = DEFAULTS["seller_other"],
        seller_share: float = DEFAULTS["seller_share"],
        buyer_strategy: str = DEFAULTS["buyer_strategy"],
        buyer_other: str = DEFAULTS["buyer_other"],
        buyer_share: float = DEFAULTS["buyer_share"],
        prices: int = DEFAULTS["prices"],
        rounds: int = DEFAULTS["rounds"],
        period: int = DEFAULTS["period"],
        first: str = DEFAULTS["first"],
        redraw: bool = DEFAULTS["redraw"],
        seed: int | None = DEFAULTS["seed"],
    ) -> None:
        super().__init__(
            n_buyers=int(n_buyers),
            n_sellers=int(n_sellers),
            seller_mix=mix_of(seller_strategy, seller_other, seller_share),
            buyer_mix=mix_of(buyer_strategy, buyer_other, buyer_share),
            prices=int(prices),
            rounds=int(rounds),
            period=int(period),
            first=first,
            redraw=bool(redraw),
            seed=None if seed is None else int(seed),
        )
        #: prices of the deals made so far in the current trading period, in order
        self.period_trades: list[float] = []
        self.seed_used = seed

    def step(self) -> None:
        super().step()
        if self.step_in_period == 1:  # this step opened a new period
            self.period_trades = []
        pairs = self.pairs_frame()
        self.period_trades.extend(pairs.loc[pairs["level"] > 0, "price"].tolist())


def model_params() -> dict[str, Any]:
    """Mesa ``model_params``: one control per :class:`ViewMarket` keyword."""
    names = strategies.names()

    def select(label: str, value: str) -> dict[str, Any]:
        return {"type": "Select", "value": value, "values": names, "label": label}

    d = DEFAULTS
    return {
        "n_sellers": Slider("Sellers", d["n_sellers"], 1, 500, 1),
        "n_buyers": Slider("Buyers", d["n_buyers"], 1, 500, 1),
        "seller_strategy": select("Seller strategy A", d["seller_strategy"]),
        "seller_other": select("Seller strategy B", d["seller_other"]),
        "seller_share": Slider("Sellers playing A (%)", d["seller_share"], 0, 100, 5),
        "buyer_strategy": select("Buyer strategy A", d["buyer_strategy"]),
        "buyer_other": select("Buyer strategy B", d["buyer_other"]),
        "buyer_share": Slider("Buyers playing A (%)", d["buyer_share"], 0, 100, 5),
        "prices": Slider("Price levels P", d["prices"], 2, 20, 1),
        "rounds": Slider("Rounds T", d["rounds"], 1, 10, 1),
        "period": Slider("Steps per trading period", d["period"], 1, 50, 1),
        "first": {"type": "Select", "value": d["first"], "values": ["random", "seller", "buyer"],
                  "label": "First mover"},
        "redraw": {"type": "Checkbox", "value": d["redraw"],
                   "label": "New values and costs each period"},
        "seed": Slider("Seed", d["seed"], 0, 1000, 1),
    }


# --- panels -------------------------------------------------------------------------------------
#: pixels per inch of the panels' PNGs: a 6.4-inch figure fills a half-width grid cell
DPI = 80


def _image(fig: Any) -> None:
    solara.FigureMatplotlib(fig, format="png", dpi=DPI)


@solara.component
def SummaryPanel(model: MarketModel) -> None:
    """Where the market stands: period, deals, prices against the band, efficiency, mixes."""
    update_counter.get()
    s = model.summary()
    eq = model.equilibrium
    mixes = [
        f"{side}s: " + ", ".join(f"{name} {share:.0%}" for name, share in model.mixes[i].items())
        for i, side in enumerate(SIDE_NAMES)
    ]
    mean = "no deal yet" if math.isnan(s["mean_price"]) else f"{s['mean_price']:.2f}"
    eff = "n/a" if math.isnan(s["efficiency"]) else f"{s['efficiency']:.1%}"
    items = [
        f"deals so far: <b>{int(s['deals'])}</b>; mean price {mean}",
        f"competitive band {eq.price_lo:.2f}-{eq.price_hi:.2f}, quantity {eq.quantity} "
        "per period",
        f"allocative efficiency of the run: <b>{eff}</b>",
        escape(f"{mixes[0]}; {mixes[1]}"),
        f"{len(model.sellers)} sellers, {len(model.buyers)} buyers; "
        f"P = {model.protocol.prices} price levels, T = {model.protocol.rounds} rounds; "
        f"seed {getattr(model, 'seed_used', None)}",
    ]
    html = (
        f"<p><b>Step {model.steps}</b>, trading period {model.period + 1} "
        f"(step {model.step_in_period} of {model.period_length})</p>"
        "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"
        "<p><i>Parameter changes apply on Reset.</i></p>"
    )
    solara.HTML(tag="div", unsafe_innerHTML=html, classes=["market-summary"])


@solara.component
def PricesPanel(model: MarketModel) -> None:
    update_counter.get()
    _image(vf.prices_figure(model.model_frame(), model.grid))


@solara.component
def DealsPanel(model: MarketModel) -> None:
    update_counter.get()
    _image(vf.deals_figure(model.model_frame()))


@solara.component
def EarningsPanel(model: MarketModel) -> None:
    update_counter.get()
    _image(vf.earnings_figure(model.model_frame()))


@solara.component
def SupplyDemandPanel(model: MarketModel) -> None:
    update_counter.get()
    trades = getattr(model, "period_trades", [])
    _image(vf.supply_demand_figure(model.values, model.costs, trades, model.grid, model.period))


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
def TracePanel(model: MarketModel) -> None:
    """The negotiation of one pair of the last step, in the legacy view; pick the pair."""
    update_counter.get()
    pair, set_pair = solara.use_state(0)
    n = model.last_pairs
    if n == 0:
        solara.Text("No pair negotiated yet: press Step.")
        return
    pair = min(pair, n - 1)
    deals = np.flatnonzero(model.pairs_frame()["level"].to_numpy() > 0)
    with solara.Row():
        solara.SliderInt(f"pair (of {n} in the last step)", value=pair, min=0, max=n - 1,
                         on_value=set_pair)
        solara.Button("first deal", disabled=deals.size == 0, text=True,
                      on_click=lambda: set_pair(int(deals[0])))
    trace = model.trace(pair)
    fig = vf.negotiation_figure(trace.record, trace.grid, pair_ranges(trace),
                                rounds=model.protocol.rounds, title=trace_title(trace))
    _image(fig)


def learner_tables(model: MarketModel) -> list[tuple[str, Any, int]]:
    """(side, Q-learning population, most-learned member) for each side that has learners."""
    out = []
    for side in range(2):
        for strat in model.strategy_objects(side):
            counts = np.bincount(model.book(side).strategy, minlength=len(
                model.strategy_names(side)))
            idx = model.strategy_objects(side).index(strat)
            if isinstance(strat, QLearning) and counts[idx] > 0:
                learned = np.abs(strat.tables).reshape(strat.n_members, -1).sum(axis=1)
                out.append((SIDE_NAMES[side], strat, int(np.argmax(learned))))
    return out


def qtable_panels(strat: QLearning, member: int) -> list[tuple[str, np.ndarray]]:
    """The member's tables to draw: one per role (and the earlier-steps clock slot)."""
    tables = strat.tables[member]
    buckets = int(getattr(strat, "buckets", 1))
    roles = tables.shape[0] // buckets
    names = ["moved first", "moved second"] if roles == 2 else ["any role"]
    return [(names[r], tables[r * buckets + buckets - 1]) for r in range(roles)]


@solara.component
def QTablePanel(model: MarketModel) -> None:
    """Heatmap of a learning trader's Q-table, or a note when nobody learns."""
    update_counter.get()
    found = learner_tables(model)
    choice, set_choice = solara.use_state("seller")
    if not found:
        solara.Text(
            "Q-table: no trader in this market learns. Choose qlearning as a strategy "
            "for a side (with a share above 0), then press Reset."
        )
        return
    sides = [f[0] for f in found]
    if choice not in sides:
        choice = sides[0]
    if len(sides) > 1:
        solara.ToggleButtonsSingle(value=choice, values=sides, on_value=set_choice)
    side, strat, member = found[sides.index(choice)]
    played = int(strat.played[member])
    title = (f"{side} learner {member} of {strat.n_members} (most learned), "
             f"{played} negotiations played")
    _image(vf.qtable_figure(qtable_panels(strat, member), model.protocol,
                            legal_rows(model.protocol), title=title))


#: the page's panels, in grid order (two per row)
PANELS = [
    SummaryPanel,
    PricesPanel,
    DealsPanel,
    EarningsPanel,
    SupplyDemandPanel,
    TracePanel,
    QTablePanel,
]


@solara.component
def MarketPage() -> None:
    """Mesa's SolaraViz on a model made once per browser session."""
    from mesa.visualization import SolaraViz

    model = solara.use_memo(lambda: ViewMarket(**DEFAULTS), [])
    SolaraViz(
        model,
        components=[(panel, 0) for panel in PANELS],
        model_params=model_params(),
        name="Negotiation market",
        play_interval=300,
    )
