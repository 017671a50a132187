"""The browser view's pictures, as plain matplotlib figures (no Solara in here).

Every panel of the Solara app (:mod:`market.view.app`) is drawn by one function of
this module from data the model already exposes (its DataCollector frame,
values and costs, a :class:`~market.game.protocol.NegotiationRecord`, a Q-table),
so the pictures can be tested and saved without a browser. Figures are built
with :class:`matplotlib.figure.Figure`, never ``pyplot``: the Solara server
renders sessions on several threads and pyplot's global state is not
thread-safe.

The negotiation picture keeps the document's legacy terminal view: a price
scale, each side's acceptable range as a light bar (green for the Buyer, red
for the Seller), each side's standing offer as a dark mark on its bar, and
``DEAL at <price>`` once they agree; below it, the offers round by round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from market.game import qtable
from market.game.grid import PriceGrid
from market.game.play import Ranges, fmt
from market.game.record import NegotiationRecord
from market.game.rules import Protocol
from market.sim.metrics import competitive_equilibrium, supply_demand
from market.view.terminal import nice_step

#: the document's curses colours, as matplotlib colours
LIGHT = {"buyer": "#bfffea", "seller": "#ffc0b1"}
DARK = {"buyer": "#00b378", "seller": "#b32d0c"}
DEAL_FACE, DEAL_TEXT = "#ff4719", "#30ff19"
LANE = {"buyer": 1.0, "seller": 0.0}


def _figure(width: float = 6.4, height: float = 4.0) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _note(ax, text: str) -> None:
    """A panel that has nothing to draw yet says why, instead of staying blank."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=11,
            color="0.3", wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


# --- the negotiation of one pair, in the legacy view ---------------------------------------
def negotiation_figure(
    record: NegotiationRecord,
    grid: PriceGrid,
    ranges: Ranges,
    shown: int | None = None,
    rounds: int | None = None,
    title: str = "",
) -> Figure:
    """One negotiation as the legacy screen drew it, after ``shown`` moves (all by default).

    Top: the price scale, the Buyer's and the Seller's acceptable ranges as
    coloured bars, each side's standing offer as a dark mark, and the outcome
    once the last move is shown. Bottom: every offer so far, round by round
    (round 1 at the top), so the path to the deal is visible at a glance.
    """
    moves = record.moves if shown is None else record.moves[: max(0, shown)]
    finished = len(moves) == len(record.moves)
    fig = _figure(6.4, 4.6)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1, 2.2])
    lo, hi = grid.lo, grid.hi
    span = hi - lo
    mark = span / 90  # one column of the legacy screen, whatever the grid

    standing: dict[str, float | None] = {"buyer": None, "seller": None}
    for mv in moves:
        if mv.action == "offer":
            standing[mv.side] = float(grid.price(mv.level))
    for side in ("buyer", "seller"):
        r_lo, r_hi = ranges.of(side)
        y = LANE[side]
        if r_lo <= r_hi:
            top.barh(y, max(r_hi - r_lo, mark), left=r_lo, height=0.6, color=LIGHT[side],
                     edgecolor=DARK[side], linewidth=0.5, label=f"{side} range",
                     gid=f"range-{side}")
        offer = standing[side]
        if offer is not None:
            top.barh(y, mark, left=offer - mark / 2, height=0.6, color=DARK[side],
                     gid=f"offer-{side}")
            top.text(offer, y + 0.42, fmt(offer), ha="center", va="bottom", fontsize=8,
                     color=DARK[side])
    top.set_yticks([LANE["seller"], LANE["buyer"]], ["SELLER", "BUYER"])
    top.set_ylim(-0.6, 1.9)
    top.xaxis.set_tick_params(labeltop=True, labelbottom=False, top=True)
    step = nice_step(span, 60)
    top.set_xticks(np.arange(math.ceil(lo / step) * step, hi + step / 2, step))
    top.set_xlim(lo - 0.02 * span, hi + 0.02 * span)

    T = rounds if rounds is not None else max(record.rounds_used, 1)
    if finished and record.deal:
        status = f"DEAL at {fmt(float(grid.price(record.deal_level)))}"
        top.text(0.99, 0.93, status, transform=top.transAxes, ha="right", va="top",
                 fontsize=11, fontweight="bold", color=DEAL_TEXT,
                 bbox=dict(facecolor=DEAL_FACE, edgecolor="none", pad=3), gid="outcome")
    elif finished and moves:
        status = "NO DEAL"
        top.text(0.99, 0.93, status, transform=top.transAxes, ha="right", va="top",
                 fontsize=11, fontweight="bold", color=DEAL_FACE, gid="outcome")
    else:
        current = moves[-1].move // 2 + 1 if moves else 0
        status = f"round {current} of {T}" if moves else "no move yet"
    head = f"{title}\n" if title else ""
    top.set_title(f"{head}{record.first} moves first · {status}", fontsize=9, loc="left")

    # zone where both would agree, then the offers round by round
    z_lo = max(ranges.buyer[0], ranges.seller[0])
    z_hi = min(ranges.buyer[1], ranges.seller[1])
    if z_lo <= z_hi:
        bottom.axvspan(z_lo, z_hi, color="0.92", zorder=0, label="both would accept")
    for side in ("buyer", "seller"):
        pts = [(float(grid.price(m.level)), m.move // 2 + 1) for m in moves
               if m.side == side and m.action == "offer"]
        if pts:
            xs, ys = zip(*pts, strict=True)
            bottom.plot(xs, ys, "o-", color=DARK[side], ms=6, lw=1.2, label=f"{side} offers",
                        gid=f"offers-{side}")
    for m in moves:
        r = m.move // 2 + 1
        if m.action == "accept":
            x = float(grid.price(m.level))
            bottom.plot([x], [r], "*", color=DEAL_FACE, ms=16, zorder=5, gid="accept")
            bottom.annotate(f"{m.side} accepts {fmt(x)}", (x, r), xytext=(8, -4),
                            textcoords="offset points", fontsize=9, color=DEAL_FACE)
        elif m.action == "reject":
            x = (lo + hi) / 2
            bottom.plot([x], [r], "X", color="0.2", ms=10, zorder=5, gid="reject")
            bottom.annotate(f"{m.side} walks away", (x, r), xytext=(8, -4),
                            textcoords="offset points", fontsize=9)
    bottom.set_ylim(T + 0.5, 0.5)
    bottom.set_yticks(range(1, T + 1) if T <= 12 else np.linspace(1, T, 6).round())
    bottom.set_ylabel("round")
    bottom.set_xlabel("price")
    if moves:
        bottom.legend(loc="lower left", fontsize=8, framealpha=0.8)
    return fig


# --- the market over time ---------------------------------------------------------------------
def _stepped(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of steps actually made (the DataCollector also records the state at step 0)."""
    return df[df["step"] > 0] if "step" in df else df.iloc[0:0]


def prices_figure(df: pd.DataFrame, grid: PriceGrid) -> Figure:
    """Transaction prices per step (mean, min-max) against the competitive price band."""
    fig = _figure()
    ax = fig.subplots()
    d = _stepped(df)
    if d.empty:
        _note(ax, "no step yet: press Step or ▶")
        return fig
    step = d["step"].to_numpy()
    ax.fill_between(step, d["ce_price_lo"], d["ce_price_hi"], step="mid", color="tab:green",
                    alpha=0.25, linewidth=0, label="competitive band", gid="band")
    for col in ("ce_price_lo", "ce_price_hi"):  # visible even when the band is a line
        ax.step(step, d[col], where="mid", color="tab:green", lw=0.8)
    has = d["deals"].to_numpy() > 0
    if has.any():
        ax.vlines(step[has], d["min_price"].to_numpy()[has], d["max_price"].to_numpy()[has],
                  color="tab:blue", alpha=0.35, lw=3, label="min-max price")
        ax.plot(step[has], d["mean_price"].to_numpy()[has], "o-", color="tab:blue", ms=3,
                lw=0.8, label="mean price", gid="mean-price")
    pad = 0.05 * (grid.hi - grid.lo)
    ax.set_ylim(grid.lo - pad, grid.hi + pad)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel("price")
    ax.set_title("transaction prices against the competitive band", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


def deals_figure(df: pd.DataFrame) -> Figure:
    """Deals per step (of the pairs that met) and allocative efficiency of the period so far."""
    fig = _figure()
    ax = fig.subplots()
    d = _stepped(df)
    if d.empty:
        _note(ax, "no step yet: press Step or ▶")
        return fig
    step = d["step"].to_numpy()
    ax.bar(step, d["pairs"], color="0.85", label="pairs that met", gid="pairs")
    ax.bar(step, d["deals"], color="tab:blue", label="deals", gid="deals")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel("negotiations")
    eff = ax.twinx()
    eff.plot(step, d["efficiency"], color="tab:red", marker=".", lw=1.2,
             label="efficiency (period so far)", gid="efficiency")
    eff.set_ylim(0, 1.05)
    eff.set_ylabel("allocative efficiency")
    lines = ax.get_legend_handles_labels()
    lines2 = eff.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8)
    ax.set_title("deals and efficiency per step", fontsize=10)
    return fig


def earnings_figure(df: pd.DataFrame) -> Figure:
    """Mean earnings per trader of each strategy on each side, over the run so far."""
    fig = _figure()
    ax = fig.subplots()
    d = _stepped(df)
    cols = [c for c in df.columns if c.count(".") >= 2 and c.startswith("earnings.")]
    if d.empty or not cols:
        _note(ax, "no step yet: press Step or ▶")
        return fig
    last = d.iloc[-1]
    labels, values, colors = [], [], []
    for c in cols:
        _, side, name = c.split(".", 2)
        labels.append(f"{side}: {name}")
        values.append(float(last[c]))
        colors.append(DARK[side])
    y = np.arange(len(labels))
    ax.barh(y, values, color=colors, gid="earnings")
    for yi, v in zip(y, values, strict=True):
        ax.text(v, yi, f" {v:.2f}", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("mean earnings per trader (surplus, money)")
    ax.set_title(f"earnings by strategy after step {int(last['step'])}", fontsize=10)
    ax.margins(x=0.15)
    return fig


def supply_demand_figure(
    values: np.ndarray, costs: np.ndarray, trades: Sequence[float], grid: PriceGrid,
    period: int = 0,
) -> Figure:
    """This period's demand and supply step curves, the competitive band, and the trades.

    The trades are drawn in the order they happened (trade ``k`` at quantity
    ``k``), as experimental-economics charts do, so one sees whether prices
    walk toward the band.
    """
    fig = _figure()
    ax = fig.subplots()
    demand, supply = supply_demand(values, costs)
    eq = competitive_equilibrium(values, costs)
    ax.step(np.arange(demand.size + 1), np.append(demand, demand[-1:]), where="post",
            color="tab:orange", label="demand (values)", gid="demand")
    ax.step(np.arange(supply.size + 1), np.append(supply, supply[-1:]), where="post",
            color="tab:purple", label="supply (costs)", gid="supply")
    if np.isfinite(eq.price_lo):
        ax.axhspan(eq.price_lo, eq.price_hi, color="tab:green", alpha=0.25,
                   label=f"band {eq.price_lo:.1f}-{eq.price_hi:.1f}, Q = {eq.quantity}")
    tr = np.asarray(trades, dtype=float)
    if tr.size:
        ax.plot(np.arange(1, tr.size + 1) - 0.5, tr, "o", color="tab:blue", ms=4,
                label=f"trades this period ({tr.size})", gid="trades")
    pad = 0.05 * (grid.hi - grid.lo)
    ax.set_ylim(grid.lo - pad, grid.hi + pad)
    ax.set_xlabel("units")
    ax.set_ylabel("price")
    ax.set_title(f"supply and demand, period {period + 1}", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    return fig


# --- a learner's table ------------------------------------------------------------------------
def qtable_figure(
    panels: Sequence[tuple[str, np.ndarray]], protocol: Protocol, legal: np.ndarray | None = None,
    title: str = "",
) -> Figure:
    """Heatmaps of Q-tables in the document's layout, one per ``(label, (S, A) table)``.

    Rows are the states ``s``, ``p.t`` and ``d``, columns the offers
    ``1..P``, accept and reject; cells the protocol never allows (``legal``
    False) are left blank so the colour scale shows only what can be played.
    """
    n = max(len(panels), 1)
    S = qtable.n_rows(protocol)
    fig = _figure(2.6 * n + 1.2, min(2.0 + 0.13 * S, 6.0))
    axes = np.atleast_1d(fig.subplots(1, n, sharey=True))
    if not panels:
        _note(axes[0], "no table")
        return fig
    tables = [np.asarray(t, dtype=float) for _, t in panels]
    masked = [np.ma.masked_where(~legal, t) if legal is not None else np.ma.asarray(t)
              for t in tables]
    finite = [m.compressed() for m in masked]
    allv = np.concatenate(finite) if finite else np.zeros(1)
    vmin, vmax = (float(allv.min()), float(allv.max())) if allv.size else (0.0, 1.0)
    if vmax <= vmin:
        vmax = vmin + 1e-9
    image = None
    for ax, (label, _), m in zip(axes, panels, masked, strict=True):
        image = ax.imshow(m, aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax,
                          interpolation="nearest", gid="qtable")
        ax.set_xticks(range(protocol.n_actions),
                      [a if a not in ("accept", "reject") else a[:3] for a in
                       protocol.action_labels()], fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("action")
    axes[0].set_yticks(range(S), qtable.row_labels(protocol), fontsize=6 if S > 30 else 7)
    axes[0].set_ylabel("state (offer.round)")
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="Q")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


__all__ = [
    "deals_figure",
    "earnings_figure",
    "negotiation_figure",
    "prices_figure",
    "qtable_figure",
    "supply_demand_figure",
]
