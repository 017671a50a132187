"""Section: the document's legacy view, showing what the Q-learners learned.

The document's static traders were drawn on a curses screen: a price scale,
each side's acceptable range as a coloured bar, its offer marked, redrawn
every round, and ``DEAL at <price>``; it proposed to "use the legacy
visualisation to display results of Q-learning". Here a pair trained by
self-play (the default preset) and a pair trained the document's way play
one negotiation each with both first movers (:func:`market.game.play.play`),
drawn by the terminal view (:func:`market.view.terminal.render`) as plain
text; the figure shows the self-play pair's tables as heatmaps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import strategies
from market.game import evaluation, qtable
from market.game.play import Ranges, game_for, play, record_dict
from market.game.record import NegotiationRecord
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Protocol
from market.game.training import TrainResult, preset, train
from market.report.section import Context, Section
from market.view.terminal import render

NAME = "legacy"
TITLE = "The legacy view of learned agents"
#: the literature this section's answer sits in (with citations)
RELATED = (
    'Plots of offers over time are how the automated-negotiation literature shows a '
    "negotiation's trace (the ANAC competitions, Baarslag et al. 2013; NegMAS draws them "
    "for every mechanism). The document's terminal view does the same with one screen per "
    'round.'
)
#: the scale drawn: level p at 100 p / P, so a price is the Seller's reward in percent
#: (the two-agent game pays the Seller p / P and the Buyer 1 - p / P)
HI = 100
WIDTH = 80


def _pair(ctx: Context, name: str, seeds: int) -> tuple[TrainResult, int]:
    """Train ``seeds`` seeds of preset ``name``; the first seed at NashConv 0 (else seed 0)."""
    res = train(preset(name, seeds=seeds, seed=ctx.seed_for(NAME, int(name == "default"))),
                nash_conv=False, exact=False)
    nc = np.asarray(evaluation.nash_conv(res.seller, res.buyer, res.protocol))
    at_zero = np.flatnonzero(nc < 1e-9)
    return res, int(at_zero[0]) if at_zero.size else 0


def _low(protocol: Protocol) -> int:
    return HI // protocol.prices


def _negotiation(res: TrainResult, i: int, first: int,
                 rng: np.random.Generator) -> tuple[NegotiationRecord, Any]:
    protocol = res.protocol
    _, grid, _ = game_for(_low(protocol), HI, protocol.rounds, fixed=protocol)
    seller = strategies.make("qlearning", SELLER, 1, protocol, tables=res.seller[i],
                             learning=False)
    buyer = strategies.make("qlearning", BUYER, 1, protocol, tables=res.buyer[i],
                            learning=False)
    ranges = Ranges(buyer=(_low(protocol), HI), seller=(_low(protocol), HI))
    return play(protocol, grid, seller, buyer, ranges, first, rng), grid


def run(ctx: Context) -> Section:
    with ctx.progress("report legacy", 2, "pairs trained") as update:
        pairs = {}
        for name in ("default", "seed"):
            pairs[name] = _pair(ctx, name, ctx.pick(8, 4))
            update(advance=1)
    blocks, rows, said = [], [], {}
    titles = {"default": "self-play, default preset", "seed": "the document's trainer"}
    for k, name in enumerate(("default", "seed")):
        res, i = pairs[name]
        nc = float(evaluation.nash_conv(res.seller[i], res.buyer[i], res.protocol))
        for first in (SELLER, BUYER):
            rng = np.random.default_rng(ctx.seed_for(NAME, 10 + k, first))
            record, grid = _negotiation(res, i, first, rng)
            lo = _low(res.protocol)
            head = (f"--- {titles[name]} (NashConv {nc:.3f}), {SIDE_NAMES[first]} moves "
                    f"first; P={res.protocol.prices} levels on {lo}-{HI}, "
                    f"T={res.protocol.rounds} ---")
            frames = render(record, grid, Ranges(buyer=(lo, HI), seller=(lo, HI)),
                            res.protocol.rounds, console_width=WIDTH)
            blocks.append("\n".join([head, *(f.plain.rstrip() for f in frames)]))
            said[(name, first)] = record_dict(record, grid)
            for m in said[(name, first)]["moves"]:
                rows.append({"pair": name, "first": SIDE_NAMES[first], "nash_conv": nc, **m})
    res, i = pairs["default"]
    fig = _figure(res.seller[i], res.buyer[i], res.protocol)
    answer = _answer(said, pairs)
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("The document proposed using its legacy visualisation to display the "
                  "results of Q-learning. What does a trained pair's negotiation look like "
                  "there?"),
        experiment=("Two pairs at P = T = 5: one trained by self-play with the default preset "
                    "(the first of a few seeds at NashConv 0) and one trained the document's "
                    "way (`--preset seed`). Each plays one greedy negotiation with each first "
                    "mover (`run.py baseline --seller qlearning:FILE.npz --buyer "
                    "qlearning:FILE.npz` plays a saved pair the same way), drawn by the legacy "
                    "terminal view as plain text: the scale (level p drawn at 100 p / P, so a "
                    "price is the Seller's reward in percent and the Buyer gets the rest), each "
                    "side's range (the whole scale: in the two-agent game every level is "
                    "acceptable), its standing offer (B, S), one screen per round, then the "
                    "outcome. The figure shows the "
                    "self-play pair's Q-tables as the browser view does: each state's learned "
                    "cells scaled from its worst (0) to its best action (1), untrained cells "
                    "blank."),
        answer=answer,
        figures={"legacy.png": fig},
        tables={"legacy_moves.csv": pd.DataFrame(rows)},
        text_block="\n\n".join(blocks),
        numbers={f"{name}_{SIDE_NAMES[first]}_first": d["outcome"] for (name, first), d in
                 said.items()},
    )


def _story(d: dict[str, Any]) -> str:
    moves = d["moves"]
    out = d["outcome"]
    end = f"a deal at {out['price']}" if out["deal"] else "no deal"
    opening = moves[0]
    return (f"the {opening['side']} opens at {opening['price']} and the negotiation ends in "
            f"{end} after {len(moves)} moves")


def _answer(said: dict[tuple[str, int], dict[str, Any]],
            pairs: dict[str, tuple[TrainResult, int]]) -> str:
    P = pairs["default"][0].protocol.prices
    levels = (said[("default", SELLER)]["outcome"]["level"],
              said[("default", BUYER)]["outcome"]["level"])
    equilibrium = levels == (P - 1, 1)
    s1 = ("The self-play pair (NashConv 0): with the Seller first "
          f"{_story(said[('default', SELLER)])}; with the Buyer first "
          f"{_story(said[('default', BUYER)])}"
          + (", the equilibrium outcomes of section 3." if equilibrium else "."))
    s2 = ("The pair trained the document's way: with the Seller first "
          f"{_story(said[('seed', SELLER)])}; with the Buyer first "
          f"{_story(said[('seed', BUYER)])}.")
    moves = np.mean([len(d["moves"]) for d in said.values()])
    haggle = [k for k in ("default", "seed")
              if np.mean([len(said[(k, f)]["moves"]) for f in (SELLER, BUYER)]) > 2]
    if haggle:
        who = "Both pairs haggle" if len(haggle) == 2 else (
            "The self-play pair haggles" if haggle == ["default"] else
            "The pair trained the document's way haggles")
        s3 = (f"{who} ({moves:.1f} moves on average over the four negotiations, where an "
              "opening offer accepted at once takes 2); the learners have no discount, so a "
              "counter-offer before the same deal costs them nothing. The view shows this; "
              "the tables alone do not.")
    else:
        s3 = "Both pairs close on the opening offer (2 moves), as a discount would make them."
    return " ".join([s1, s2, s3])


def _figure(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = qtable.row_labels(protocol)
    acts = protocol.action_labels()
    fig, axes = plt.subplots(1, 4, figsize=(15, 6.2), sharey=True)
    panels = [(seller, 0, "Seller, moved first"), (seller, 1, "Seller, moved second"),
              (buyer, 0, "Buyer, moved first"), (buyer, 1, "Buyer, moved second")]
    for ax, (tables, role, title) in zip(axes, panels, strict=True):
        q = np.asarray(tables, dtype=float)[role if tables.shape[0] == 2 else 0]
        blank = qtable.untrained(q, protocol)
        lo = np.where(blank, np.inf, q).min(axis=1, keepdims=True)
        hi = np.where(blank, -np.inf, q).max(axis=1, keepdims=True)
        span = np.where(hi > lo, hi - lo, 1.0)
        scaled = np.where(blank, np.nan, np.where(hi > lo, (q - lo) / span, 1.0))
        ax.imshow(scaled, aspect="auto", cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(acts)), acts, rotation=90, fontsize=7)
        ax.set_title(title, fontsize=9)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=6)
    axes[0].set_ylabel("state: s, then p.t (the opponent offered p in round t), then d")
    fig.suptitle("Self-play Q-tables: each state's learned actions from worst (dark) to best "
                 "(yellow); blank: never updated", fontsize=10)
    fig.tight_layout()
    return fig
