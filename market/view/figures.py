"""The browser view's pictures, as Vega-Lite chart specifications; no Solara in here.

Every panel of the Solara app (:mod:`market.view.app`) is drawn by one function of
this module from data the model already exposes (its DataCollector frame,
values and costs, a :class:`~market.game.record.NegotiationRecord`, a Q-table),
so the pictures can be tested as specifications and timed without a browser.

Why Vega-Lite: a matplotlib panel was re-rendered to a PNG on the server at
every step (six of them took about a second), while a Vega-Lite chart is a
small JSON specification that the browser draws (Solara's ``FigureAltair``
widget; Mesa's Altair plot components use it too). The specifications are
written here as plain dictionaries rather than through Altair's classes:
building a chart with Altair costs 10 to 200 ms (it copies and validates
every piece against the schema, and sanitises the whole DataFrame), about
as much as a hundred market steps; a dictionary costs well under a
millisecond. The tests validate every specification against the Vega-Lite
schema that Altair ships, once, instead of at every step. Only features
of Vega-Lite 5.2 (the version served to the browser) are used.

One negotiation's pictures and a learner's table are :mod:`market.view.pair_figures`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from market.game.grid import PriceGrid
from market.sim.yardsticks import competitive_equilibrium, supply_demand

Spec = dict[str, Any]

#: the document's curses colours
LIGHT = {"buyer": "#bfffea", "seller": "#ffc0b1"}
DARK = {"buyer": "#00b378", "seller": "#b32d0c"}
ACCEPT = "#d62728"
BAND = "#2ca02c"
PRICE = "#1f77b4"
#: chart size in pixels (two charts side by side in the page's main area)
WIDTH, HEIGHT = 370, 220
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
#: vega-embed's options, read from the spec: no "..." menu (its "Open in Vega Editor" would
#: leave the machine); SVG, so the charts' text is in the page (searchable, testable)
EMBED = {"embedOptions": {"actions": False, "renderer": "svg"}}


# --- helpers ------------------------------------------------------------------------------------
def _clean(x: Any) -> Any:
    """A JSON-ready scalar: numpy numbers to Python, NaN and infinities to None (a gap)."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def records(**columns: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows ``{name: value}`` from equal-length columns, ready to inline in a chart."""
    names = list(columns)
    cols = []
    for c in columns.values():
        values = c if isinstance(c, list) else np.asarray(c).tolist()
        cols.append([_clean(v) for v in values])
    return [dict(zip(names, row, strict=True)) for row in zip(*cols, strict=True)]


def top(spec: Spec, title: str | None = None) -> Spec:
    """A top-level specification: schema, title, no action menu."""
    out: Spec = {"$schema": SCHEMA, "usermeta": EMBED}
    if title:
        out["title"] = {"text": title, "anchor": "start", "fontSize": 13}
    out.update(spec)
    return out


def _channel(kind: str, field: str, title: Any, extra: dict[str, Any]) -> Spec:
    out: Spec = {"field": field, "type": kind}
    if title is not ...:
        out["title"] = title
    out.update(extra)
    return out


def q(field: str, title: Any = ..., **extra: Any) -> Spec:
    """A quantitative channel; ``title=None`` hides the axis or legend title."""
    return _channel("quantitative", field, title, extra)


def n(field: str, title: Any = ..., **extra: Any) -> Spec:
    """A nominal channel; ``title=None`` hides the axis or legend title."""
    return _channel("nominal", field, title, extra)


def note_chart(text: str, title: str | None = None, height: int = 120) -> Spec:
    """A panel with nothing to draw yet says why, instead of staying blank."""
    return top({
        "width": WIDTH, "height": height, "data": {"values": [{"text": text}]},
        "mark": {"type": "text", "fontSize": 13, "color": "#555555"},
        "encoding": {"text": n("text")},
    }, title)


def _stepped(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of steps actually made (the DataCollector also records the state at step 0)."""
    return df[df["step"] > 0] if "step" in df else df.iloc[0:0]


STEP_AXIS = {"tickMinStep": 1, "format": "d"}


# --- the market over time ---------------------------------------------------------------------
def prices_chart(df: pd.DataFrame, grid: PriceGrid) -> Spec:
    """Transaction prices per step (mean, min-max) against the competitive price band."""
    title = "Transaction prices against the competitive band"
    d = _stepped(df)
    if d.empty:
        return note_chart("no step yet: press Step or ▶", title)
    rows = records(step=d["step"], lo=d["ce_price_lo"], hi=d["ce_price_hi"],
                   mean=d["mean_price"], pmin=d["min_price"], pmax=d["max_price"])
    pad = 0.05 * (grid.hi - grid.lo)
    y_scale = {"domain": [grid.lo - pad, grid.hi + pad], "nice": False}
    names = ["competitive band", "min-max price", "mean price"]
    colour = {"field": "series", "type": "nominal", "legend": {"orient": "top", "title": None},
              "scale": {"domain": names, "range": [BAND, "#9ecae1", PRICE]}}
    x = q("step", "step", axis=STEP_AXIS)

    def layer(series: str, mark: Spec, encoding: Spec, name: str | None = None) -> Spec:
        return {"name": name or series, "mark": mark,
                "transform": [{"calculate": f"'{series}'", "as": "series"}],
                "encoding": {"x": x, "color": colour, **encoding}}

    return top({
        "width": WIDTH, "height": HEIGHT, "data": {"values": rows},
        "layer": [
            layer("competitive band", {"type": "area", "opacity": 0.3, "interpolate": "step"},
                  {"y": q("lo", "price", scale=y_scale), "y2": {"field": "hi"}}),
            # its edges as lines too: a narrow band would not show as an area
            layer("competitive band", {"type": "line", "interpolate": "step", "strokeWidth": 1},
                  {"y": q("lo", scale=y_scale)}, "band from"),
            layer("competitive band", {"type": "line", "interpolate": "step", "strokeWidth": 1},
                  {"y": q("hi", scale=y_scale)}, "band to"),
            layer("min-max price", {"type": "rule", "strokeWidth": 3, "opacity": 0.8},
                  {"y": q("pmin", scale=y_scale), "y2": {"field": "pmax"}}),
            layer("mean price", {"type": "line", "point": True, "strokeWidth": 1.2},
                  {"y": q("mean", scale=y_scale),
                   "tooltip": [q("step"), q("mean", "mean price", format=".2f"),
                               q("lo", "band from", format=".2f"),
                               q("hi", "band to", format=".2f")]}),
        ],
    }, title)


#: the deals panel's measures for Mesa's plot component, with their colours
DEALS_MEASURES = {"pairs": "#bbbbbb", "deals": PRICE, "efficiency": ACCEPT}


def deals_chart(df: pd.DataFrame, bilateral: bool = True) -> Spec:
    """Pairs that met (in bilateral bargaining; a book has no pairs but its trades) and deals
    per step, and the period's allocative efficiency so far.

    Deals are counts and efficiency a fraction, so efficiency has its own
    axis on the right (0 to 1).
    """
    title = "Deals and efficiency per step"
    d = _stepped(df)
    if d.empty:
        return note_chart("no step yet: press Step or ▶", title)
    steps = d["step"].to_numpy()
    measures = {k: c for k, c in DEALS_MEASURES.items() if bilateral or k != "pairs"}
    rows = records(step=np.tile(steps, len(measures)),
                   measure=[m for m in measures for _ in steps],
                   value=np.concatenate([d[m] for m in measures]))
    colour = {"field": "measure", "type": "nominal", "legend": {"orient": "top", "title": None},
              "scale": {"domain": list(measures), "range": list(measures.values())}}
    x = q("step", "step", axis=STEP_AXIS)
    tip = [q("step"), n("measure"), q("value", format=".3~f")]
    return top({
        "width": WIDTH, "height": HEIGHT, "data": {"values": rows},
        "layer": [
            {"name": "counts", "mark": {"type": "line", "point": True},
             "transform": [{"filter": {"field": "measure",
                                       "oneOf": [m for m in measures if m != "efficiency"]}}],
             "encoding": {"x": x, "y": q("value", "negotiations per step"), "color": colour,
                          "tooltip": tip}},
            {"name": "efficiency", "mark": {"type": "line", "strokeDash": [4, 2]},
             "transform": [{"filter": {"field": "measure", "equal": "efficiency"}}],
             "encoding": {"x": x, "y": q("value", "allocative efficiency (period so far)",
                                         scale={"domain": [0, 1]}, axis={"orient": "right"}),
                          "color": colour, "tooltip": tip}},
        ],
        "resolve": {"scale": {"y": "independent"}},
    }, title)


def shares_chart(df: pd.DataFrame) -> Spec:
    """Each side's strategy shares per step, stacked (the market's ``share.SIDE.NAME``
    columns, recorded when traders revise their strategies)."""
    title = "Strategy shares per step"
    cols = [c for c in df.columns if c.startswith("share.")]
    if not cols:
        return note_chart("no strategy revision: choose a protocol under Strategy revision "
                          "in the sidebar, then Reset", title)
    d = _stepped(df)
    if d.empty:
        return note_chart("no step yet: press Step or ▶", title)
    steps = d["step"].to_numpy()
    parts = [c.split(".", 2) for c in cols]
    rows = records(step=np.tile(steps, len(cols)),
                   side=[side for _, side, _ in parts for _ in steps],
                   strategy=[name for _, _, name in parts for _ in steps],
                   share=np.concatenate([d[c].to_numpy() for c in cols]))
    return top({
        "data": {"values": rows},
        "facet": {"row": {"field": "side", "type": "nominal", "title": None,
                          "sort": ["seller", "buyer"]}},
        "spec": {"width": WIDTH, "height": HEIGHT // 2 - 10,
                 "mark": {"type": "area", "interpolate": "step-after"},
                 "encoding": {"x": q("step", "step", axis=STEP_AXIS),
                              "y": q("share", "share of the side", stack="zero",
                                     scale={"domain": [0, 1]}),
                              "color": n("strategy", None, legend={"orient": "right"}),
                              "tooltip": [q("step"), n("side"), n("strategy"),
                                          q("share", format=".0%")]}},
        "resolve": {"scale": {"color": "shared"}},
    }, title)


def earnings_rows(summary: dict[str, float]) -> list[dict[str, Any]]:
    """Mean earnings per trader by side and strategy, then each team's pooled earnings."""
    rows = []
    for key, value in summary.items():
        parts = key.split(".")
        if parts[0] != "earnings" or len(parts) < 3:
            continue
        if parts[1] == "team":
            side, team = parts[2], parts[3]
            rows.append({"group": "team", "side": side, "label": f"{side} team {team}",
                         "value": _clean(float(value))})
        else:
            rows.append({"group": "strategy", "side": parts[1],
                         "label": f"{parts[1]}: {'.'.join(parts[2:])}",
                         "value": _clean(float(value))})
    return rows


#: the width of a digit of an 11-pixel label, in pixels (a little over the font's)
DIGIT_PX = 7.0


def label_room(rows: Sequence[dict[str, Any]], width: float) -> list[float]:
    """An earnings axis from 0 to each bar's end, and beyond the bars on each side room for
    the widest value written past a bar's end there, so that every value stays inside a
    chart of ``width`` pixels (the longest one's was cut, "8,6")."""
    values = [r["value"] for r in rows]
    lo, hi = min(0.0, *values), max(0.0, *values)

    def share(side: list[float]) -> float:  # of the chart's width, for that side's labels
        return (DIGIT_PX * max(len(f"{v:,.2f}") for v in side) + 6) / width if side else 0.0

    up, down = share([v for v in values if v >= 0]), share([v for v in values if v < 0])
    if up + down > 0.9:  # labels wider than the chart: the bars keep a tenth of it
        up, down = 0.9 * up / (up + down), 0.9 * down / (up + down)
    whole = ((hi - lo) or 1.0) / (1 - up - down)
    return [lo - down * whole, hi + up * whole]


def earnings_chart(summary: dict[str, float], steps: int) -> Spec:
    """Mean earnings per trader of each strategy on each side, and each team's, so far."""
    rows = earnings_rows(summary)
    if steps == 0 or not rows:
        return note_chart("no step yet: press Step or ▶", "Earnings by strategy and by team")
    side = {"field": "side", "type": "nominal", "legend": None,
            "scale": {"domain": list(DARK), "range": list(DARK.values())}}

    def bars(group: str, heading: str) -> Spec:
        part = [r for r in rows if r["group"] == group]
        enc = {"y": n("label", None, sort=None),
               "x": q("value", heading, scale={"domain": label_room(part, WIDTH - 120)})}

        def labels(sign: str, align: str, dx: int) -> Spec:  # past each bar's end
            return {"mark": {"type": "text", "align": align, "dx": dx, "fontSize": 11},
                    "transform": [{"filter": f"datum.value {sign} 0"}],
                    "encoding": {**enc, "text": q("value", format=",.2f")}}

        return {
            "name": group, "width": WIDTH - 120, "height": min(max(22 * len(part), 40), 200),
            "data": {"values": part},
            "layer": [
                {"mark": "bar", "encoding": {**enc, "color": side,
                                             "tooltip": [n("label"), q("value", format=",.2f")]}},
                labels(">=", "left", 3), labels("<", "right", -3),
            ],
        }

    charts = [bars("strategy", "mean earnings per trader (surplus, money)")]
    if any(r["group"] == "team" for r in rows):
        charts.append(bars("team", "team earnings (pooled surplus, money)"))
    return top({"vconcat": charts}, f"Earnings by strategy and by team after step {steps}")


def supply_demand_chart(
    values: np.ndarray, costs: np.ndarray, trades: Sequence[float], grid: PriceGrid,
    period: int = 0,
) -> Spec:
    """This period's demand and supply step curves, the competitive band, and the trades.

    The trades are drawn in the order they happened (trade ``k`` at quantity
    ``k``), as experimental-economics charts do, so one sees whether prices
    walk toward the band.
    """
    demand, supply = supply_demand(values, costs)
    eq = competitive_equilibrium(values, costs)
    tr = np.asarray(trades, dtype=float)
    trade_name = "trades this period"
    curves = records(
        units=np.concatenate([np.arange(demand.size + 1), np.arange(supply.size + 1)]),
        price=np.concatenate([np.append(demand, demand[-1:]), np.append(supply, supply[-1:])]),
        curve=["demand (values)"] * (demand.size + 1) + ["supply (costs)"] * (supply.size + 1),
    )
    pad = 0.05 * (grid.hi - grid.lo)
    y_scale = {"domain": [grid.lo - pad, grid.hi + pad], "nice": False}
    colour = {"field": "curve", "type": "nominal", "legend": {"orient": "top", "title": None},
              "scale": {"domain": ["demand (values)", "supply (costs)", trade_name],
                        "range": ["#ff7f0e", "#9467bd", PRICE]}}
    x = q("units", "units")
    layers: list[Spec] = []
    if np.isfinite(eq.price_lo):
        layers.append({
            "name": "band", "data": {"values": records(lo=[eq.price_lo], hi=[eq.price_hi])},
            "mark": {"type": "rect", "opacity": 0.25, "color": BAND},
            "encoding": {"y": q("lo", scale=y_scale), "y2": {"field": "hi"},
                         "tooltip": [q("lo", "band from", format=".2f"),
                                     q("hi", "band to", format=".2f")]},
        })
    layers.append({"name": "curves", "data": {"values": curves},
                   "mark": {"type": "line", "interpolate": "step-after"},
                   "encoding": {"x": x, "y": q("price", "price", scale=y_scale),
                                "color": colour}})
    pts = records(units=np.arange(1, tr.size + 1) - 0.5, price=tr,
                  curve=[trade_name] * tr.size)  # there even when empty: the shape holds
    layers.append({"name": "trades", "data": {"values": pts},
                   "mark": {"type": "point", "filled": True, "size": 30},
                   "encoding": {"x": x, "y": q("price", scale=y_scale), "color": colour,
                                "tooltip": [q("price", format=".2f")]}})
    band_text = (f"band {eq.price_lo:.1f}-{eq.price_hi:.1f}, Q = {eq.quantity}"
                 if np.isfinite(eq.price_lo) else "no competitive band")
    return top({"width": WIDTH, "height": HEIGHT, "layer": layers},
               f"Supply and demand, period {period + 1} ({band_text}; {tr.size} trades)")


def book_chart(rows: Sequence[dict[str, Any]], grid: PriceGrid, what: str,
               period: int = 0) -> Spec:
    """A double auction's (or call market's) period, step by step: the best bid and the
    best ask at each step's end (in a call market, the best the call left unmatched), and
    each trade's price at the step it was made; ``what``: the book's name in the title
    (:attr:`market.sim.institutions.Institution.chart`)."""
    standing = [(r["step"], r[key], words) for key, words in (("bid", "best bid"),
                                                              ("ask", "best ask"))
                for r in rows if math.isfinite(r[key])]  # JSON has no NaN: no quote, no point
    quotes = records(step=[s[0] for s in standing], price=[s[1] for s in standing],
                     what=[s[2] for s in standing])
    trades = [(r["step"], p) for r in rows for p in r["trades"]]
    pts = records(step=[t[0] for t in trades], price=[t[1] for t in trades],
                  what=["trades"] * len(trades))
    pad = 0.05 * (grid.hi - grid.lo)
    y = q("price", "price", scale={"domain": [grid.lo - pad, grid.hi + pad], "nice": False})
    colour = {"field": "what", "type": "nominal", "legend": {"orient": "top", "title": None},
              "scale": {"domain": ["best bid", "best ask", "trades"],
                        "range": [DARK["buyer"], DARK["seller"], PRICE]}}
    x = q("step", "step of the period")
    layers = [
        {"name": "quotes", "data": {"values": quotes},
         "mark": {"type": "line", "point": True, "interpolate": "step-after"},
         "encoding": {"x": x, "y": y, "color": colour,
                      "tooltip": [q("step"), n("what"), q("price", format=".2f")]}},
        {"name": "trades", "data": {"values": pts},
         "mark": {"type": "point", "filled": True, "size": 30, "opacity": 0.6},
         "encoding": {"x": x, "y": y, "color": colour,
                      "tooltip": [q("step"), q("price", format=".2f")]}},
    ]
    return top({"width": WIDTH, "height": HEIGHT, "layer": layers},
               f"Period {period + 1}: {what} ({len(trades)} trades)")
