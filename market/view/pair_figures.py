"""One negotiation's pictures and a learner's table, as Vega-Lite specifications: the two-agent
page's (:mod:`market.view.two_agent`), drawn with :mod:`market.view.figures`' helpers.

The negotiation picture keeps the document's legacy terminal view: a price
scale, each side's acceptable range as a light bar (green for the Buyer, red
for the Seller), each side's standing offer as a dark mark on its bar; below
it, the offers round by round. The outcome banner (``DEAL at 32``) is
:func:`banner_html`, in the colours the terminal uses (WCAG AA contrast).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

import numpy as np

from market.game import qtable
from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt
from market.game.record import NegotiationRecord
from market.game.rules import Protocol
from market.view.figures import ACCEPT, DARK, LIGHT, WIDTH, Spec, n, note_chart, q, records, top
from market.view.terminal import banner_colours, outcome_label


# --- the negotiation of one pair, in the legacy view ---------------------------------------
def split_chart(rows: list[dict[str, Any]], title: str) -> Spec:
    """Horizontal bars of the first mover's share: a negotiation's beside theory's
    (:func:`market.view.two_agent.theory_rows`), on a fixed 0-1 axis."""
    enc = {"y": n("what", None, sort=None), "x": q("share", "first mover's share of the surplus",
                                                   scale={"domain": [0, 1]})}
    return top({
        "width": 420, "height": 24 * len(rows), "data": {"values": records(
            what=[r["what"] for r in rows], share=[float(r["share"]) for r in rows])},
        "layer": [
            {"mark": "bar", "encoding": {**enc, "color": n("what", None, legend=None),
                                         "tooltip": [n("what"), q("share", format=".3f")]}},
            {"mark": {"type": "text", "align": "left", "dx": 3, "fontSize": 11},
             "encoding": {**enc, "text": q("share", format=".3f")}},
        ],
    }, title)


def negotiation_status(record: NegotiationRecord, grid: PriceGrid, shown: int | None = None,
                       rounds: int | None = None) -> str:
    """``DEAL at 32``, ``NO DEAL``, ``round 2 of 10`` or ``no move yet``, after ``shown`` moves."""
    total = len(record.moves)
    k = total if shown is None else max(0, min(shown, total))
    if k == total and total:
        return outcome_label(record, grid)
    if k == 0:
        return "no move yet"
    T = rounds if rounds is not None else max(record.rounds_used, 1)
    return f"round {record.moves[k - 1].move // 2 + 1} of {T}"


def banner_html(record: NegotiationRecord, grid: PriceGrid) -> str:
    """The outcome banner in the terminal's colours (``DEAL at 32`` or ``NO DEAL``)."""
    fg, bg = banner_colours(record.deal)
    return (f"<span class='outcome-banner' style='color: {fg}; background-color: {bg}; "
            "font-weight: bold; font-size: 15px; padding: 3px 10px; border-radius: 3px; "
            f"white-space: nowrap'>{escape(outcome_label(record, grid))}</span>")


def negotiation_chart(
    record: NegotiationRecord,
    grid: PriceGrid,
    ranges: Ranges,
    shown: int | None = None,
    rounds: int | None = None,
    title: str = "",
    width: int = WIDTH,
) -> Spec:
    """One negotiation as the legacy screen drew it, after ``shown`` moves (all by default).

    Top: the price scale, the Buyer's and the Seller's acceptable ranges as
    coloured bars and each side's standing offer as a dark mark. Bottom: every
    offer so far, round by round (round 1 at the top), accepts and walk-aways
    marked, over the band of prices both would accept.
    """
    total = len(record.moves)
    k = total if shown is None else max(0, min(shown, total))
    moves = record.moves[:k]
    span = grid.hi - grid.lo
    x_scale = {"domain": [grid.lo - 0.02 * span, grid.hi + 0.02 * span], "nice": False,
               "zero": False}
    sides = {"domain": ["buyer", "seller"], "range": [DARK["buyer"], DARK["seller"]]}
    side_colour = {"field": "side", "type": "nominal", "legend": None, "scale": sides}
    upper = _negotiation_ranges(record, grid, ranges, moves, k, rounds, title, width, x_scale,
                                side_colour)
    lower = _negotiation_path(record, grid, ranges, moves, rounds, width, x_scale, side_colour)
    return top({"vconcat": [upper, lower], "spacing": 6})


def _negotiation_ranges(record: NegotiationRecord, grid: PriceGrid, ranges: Ranges,
                        moves: Sequence[Any], k: int, rounds: int | None, title: str,
                        width: int, x_scale: Spec, side_colour: Spec) -> Spec:
    """The legacy screen's upper part: each side's acceptable range and standing offer."""
    lane = n("lane", None, sort=["BUYER", "SELLER"], axis={"labelFontWeight": "bold"})

    bars = [b for b in records(lane=["BUYER", "SELLER"], side=["buyer", "seller"],
                               lo=[ranges.buyer[0], ranges.seller[0]],
                               hi=[ranges.buyer[1], ranges.seller[1]],
                               fill=[LIGHT["buyer"], LIGHT["seller"]]) if b["lo"] <= b["hi"]]
    standing: dict[str, float | None] = {"buyer": None, "seller": None}
    for mv in moves:
        if mv.action == "offer":
            standing[mv.side] = float(grid.price(mv.level))
    offers = [{"lane": s.upper(), "side": s, "price": p, "label": fmt(p)}
              for s, p in standing.items() if p is not None]
    top_layers: list[Spec] = [{
        "name": "ranges", "data": {"values": bars},
        "mark": {"type": "bar", "height": 22, "strokeWidth": 0.8},
        "encoding": {"x": q("lo", None, scale=x_scale, axis={"orient": "top"}),
                     "x2": {"field": "hi"}, "y": lane,
                     "fill": {"field": "fill", "type": "nominal", "scale": None},
                     "stroke": {**side_colour},
                     "tooltip": [n("side"), q("lo", "accepts from"), q("hi", "accepts up to")]},
    }]
    # every layer is there even when empty, so that the chart's shape does not change with
    # the negotiation (the page then updates its data instead of drawing it anew)
    enc = {"x": q("price", scale=x_scale), "y": lane, "color": side_colour}
    top_layers += [
        {"name": "offers", "data": {"values": offers},
         "mark": {"type": "tick", "thickness": 5, "size": 26}, "encoding": enc},
        {"name": "offer labels", "data": {"values": offers},
         "mark": {"type": "text", "dy": -18, "fontSize": 11, "fontWeight": "bold"},
         "encoding": {**enc, "text": n("label")}},
    ]
    status = negotiation_status(record, grid, k, rounds)
    lines = [title] if title else []
    upper = {"title": {"text": [*lines, f"{record.first} moves first · {status}"],
                       "anchor": "start", "fontSize": 12},
             "width": width, "height": 90, "layer": top_layers}
    return upper


def _negotiation_path(record: NegotiationRecord, grid: PriceGrid, ranges: Ranges,
                      moves: Sequence[Any], rounds: int | None, width: int, x_scale: Spec,
                      side_colour: Spec) -> Spec:
    """The lower part: every offer round by round, accepts and walk-aways, over the band
    of prices both would accept."""
    lo, hi = grid.lo, grid.hi
    T = rounds if rounds is not None else max(record.rounds_used, 1)
    ticks = list(range(1, T + 1)) if T <= 12 else [int(v) for v in np.linspace(1, T, 6)]
    y_round = q("round", "round", scale={"domain": [T + 0.5, 0.5], "nice": False, "zero": False},
                axis={"values": ticks, "format": "d"})
    x_price = q("price", "price", scale=x_scale)
    lower_layers: list[Spec] = []
    z_lo = max(ranges.buyer[0], ranges.seller[0])
    z_hi = min(ranges.buyer[1], ranges.seller[1])
    zone = [{"lo": z_lo, "hi": z_hi, "what": "both would accept"}] if z_lo <= z_hi else []
    lower_layers.append({
        "name": "zone", "data": {"values": zone},
        "mark": {"type": "rect", "color": "#e8e8e8"},
        "encoding": {"x": q("lo", scale=x_scale), "x2": {"field": "hi"},
                     "tooltip": [n("what")]},
    })
    path = [{"side": m.side, "price": float(grid.price(m.level)), "round": m.move // 2 + 1,
             "move": m.move + 1} for m in moves if m.action == "offer"]
    lower_layers.append({
        "name": "path", "data": {"values": path},
        "mark": {"type": "line", "point": {"size": 50}},
        "encoding": {"x": x_price, "y": y_round, "color": side_colour, "detail": n("side"),
                     "order": q("move"), "tooltip": [q("move"), n("side"), q("price")]},
    })
    ends = []
    for m in moves:
        if m.action == "accept":
            price = float(grid.price(m.level))
            ends.append({"price": price, "round": m.move // 2 + 1, "kind": "accept",
                         "text": f"{m.side} accepts {fmt(price)}"})
        elif m.action == "reject":
            ends.append({"price": (lo + hi) / 2, "round": m.move // 2 + 1, "kind": "reject",
                         "text": f"{m.side} walks away"})
    for kind, colour, shape in (("accept", ACCEPT, "diamond"), ("reject", "#333333", "cross")):
        these = [e for e in ends if e["kind"] == kind]
        enc = {"x": x_price, "y": y_round}
        lower_layers += [
            {"name": kind, "data": {"values": these},
             "mark": {"type": "point", "size": 220, "filled": True, "shape": shape,
                      "color": colour}, "encoding": enc},
            {"name": f"{kind} label", "data": {"values": these},
             "mark": {"type": "text", "align": "left", "dx": 10, "fontSize": 12,
                      "fontWeight": "bold", "color": colour},
             "encoding": {**enc, "text": n("text")}},
        ]
    return {"width": width, "height": min(30 + 18 * T, 240), "layer": lower_layers}


# --- a learner's table ------------------------------------------------------------------------
def relative_q(table: np.ndarray, blank: np.ndarray) -> np.ndarray:
    """Each row's learned cells scaled to [0, 1]: 1 the row's best action, 0 its worst.

    Q-values of different states differ by orders of magnitude (a state near
    the deadline is worth the deal at hand, the start state the whole game),
    so one colour scale over the table shows a nearly uniform block. Scaled
    within each row, the colours show what the learner prefers in each
    state. Cells in ``blank`` are NaN; a row with a single learned value (or
    equal values) reads 1.
    """
    values = np.asarray(table, dtype=float)
    with np.errstate(all="ignore"):
        lo = np.where(blank, np.inf, values).min(axis=-1, keepdims=True)
        hi = np.where(blank, -np.inf, values).max(axis=-1, keepdims=True)
        width = hi - lo
        rel = np.where(width > 0, (values - lo) / np.where(width > 0, width, 1.0), 1.0)
    return np.where(blank, np.nan, rel)


def qtable_chart(
    panels: Sequence[tuple[str, np.ndarray]], protocol: Protocol, init: float = 0.0,
    title: str = "",
) -> Spec:
    """Heatmaps of Q-tables in the document's layout, one per ``(label, (S, A) table)``.

    Rows are the states ``s``, ``p.t`` (opponent's offer ``p`` made in round
    ``t``) and ``d``; columns the offers ``1..P``, accept and reject. Colours
    are :func:`relative_q` (per state, best action 1); cells the protocol never
    allows or that still hold their initial value are left blank; the raw
    Q-value is in each cell's tooltip.
    """
    if not panels:
        return note_chart("no table", title)
    labels = qtable.row_labels(protocol)
    actions = [a if a not in ("accept", "reject") else a[:3] for a in protocol.action_labels()]
    S, A = len(labels), len(actions)
    row_h = 11 if S <= 40 else max(2, 480 // S)
    charts = []
    for i, (label, table) in enumerate(panels):
        table = np.asarray(table, dtype=float)
        blank = qtable.untrained(table, protocol, init)
        rel = relative_q(table, blank)
        r, c = np.nonzero(~blank)
        rows = records(state=[labels[j] for j in r], action=[actions[j] for j in c],
                       q=table[r, c], rel=rel[r, c])
        charts.append({
            "name": label, "title": {"text": label, "fontSize": 11},
            "width": min(22 * A, 260), "height": row_h * S, "data": {"values": rows},
            "mark": "rect",
            "encoding": {
                "x": n("action", "action", sort=actions, scale={"domain": actions},
                       axis={"labelAngle": 0}),
                "y": n("state", "state (offer.round)" if i == 0 else None, sort=labels,
                       scale={"domain": labels},
                       axis={"labels": i == 0, "ticks": i == 0,
                             "labelFontSize": 9 if S <= 40 else 7}),
                "color": q("rel", ["Q in its state", "(1 = best)"],
                           scale={"scheme": "viridis", "domain": [0, 1]}),
                "tooltip": [n("state"), n("action"), q("q", "Q", format=".4f"),
                            q("rel", "relative to the state's best", format=".2f")],
            },
        })
    spec = {"hconcat": charts, "spacing": 8} if len(charts) > 1 else charts[0]
    return top(spec, title or None)


__all__ = ["banner_html", "negotiation_chart", "negotiation_status", "qtable_chart", "relative_q",
           "split_chart"]
