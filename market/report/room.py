"""Section 4: a room of learners with different learning parameters.

The document proposed training "a bunch of agents with different learning
parameters" and putting them "in a global room". Here every trader of a
market (:class:`~market.sim.model.MarketModel`, ``learner_params="drawn"``)
is a Q-learner whose learning rate, discount and exploration are drawn per
agent, learning online. Each trader's earnings per period are regressed on
its parameters, with its competitive surplus (what it would earn at the
competitive price) as a control; the fit is made within each seed's market
and the trend's interval is over seeds (the traders of one market share its
history, so only markets are independent).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.game.rules import BUYER, SELLER
from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import run_seed

NAME = "room"
TITLE = "A room of learners with different parameters"
#: the literature this section's answer sits in (with citations)
RELATED = (
    'Calvano, Calzolari, Denicolò and Pastorello (2020) let Q-learners set prices over a '
    'grid of learning rates and exploration speeds and found that the parameters shape the '
    'outcome strongly when every firm uses the same ones; here each trader draws its own, '
    'and what a trader earns is driven first by its own cost or value (its competitive '
    "surplus), against which the parameters' effects are measured."
)
#: the drawn learning parameters, as the learners hold them, and their words
PARAMS = {
    "lr": "learning rate",
    "gamma": "discount",
    "epsilon_start": "initial exploration",
    "epsilon_end": "final exploration",
    "epsilon_decay": "exploration decay per negotiation",
}


def traders(n: int, steps: int, seed: int) -> pd.DataFrame:
    """One market of ``n`` + ``n`` drawn learners run for ``steps``: one row per trader with
    its learning parameters, its competitive surplus and its earnings per period."""
    from market.sim.model import MarketModel

    model = MarketModel(n_buyers=n, n_sellers=n, buyer_mix={"qlearning": 1.0},
                        seller_mix={"qlearning": 1.0}, learner_params="drawn",
                        agent_data="none", seed=seed)
    for _ in range(steps):
        model.step()
    mid = model.ledger.equilibrium.price_mid
    periods = model.summary()["periods"]
    frames = []
    for side in (SELLER, BUYER):
        book = model.market.books[side]
        learner = model.market.strategies[side][0]  # the only strategy of the side
        member = book.member
        potential = (np.maximum(mid - book.reservation, 0.0) if side == SELLER
                     else np.maximum(book.reservation - mid, 0.0))
        frames.append(pd.DataFrame({
            "side": "seller" if side == SELLER else "buyer",
            "reservation": book.reservation,
            "competitive_surplus": potential,
            **{p: getattr(learner, p)[member] for p in PARAMS},
            "earnings_per_period": book.earnings / periods,
            "trades": book.trades,
        }))
    return pd.concat(frames, ignore_index=True)


def run(ctx: Context) -> Section:
    n = ctx.pick(100, 30)
    steps = ctx.pick(600, 60)
    seeds = ctx.pick(20, 3)
    frames = []
    with ctx.progress("report room", seeds, "markets") as update:
        for i in range(seeds):
            frames.append(traders(n, steps, run_seed(ctx.seed_for(NAME), i)).assign(seed=i))
            update(advance=1)
    agents = pd.concat(frames, ignore_index=True)
    names = list(PARAMS)
    x = agents[[*names, "competitive_surplus"]].to_numpy(float)
    y = agents["earnings_per_period"].to_numpy(float)
    coef = stats.slopes(x, y, agents["seed"].to_numpy())  # (seeds, 1 + k)
    width = {p: float(agents[p].max() - agents[p].min()) for p in names}
    effects = {p: stats.mean(coef[:, 1 + j] * width[p]) for j, p in enumerate(names)}
    adjusted, tests = stats.family(
        {PARAMS[p]: stats.as_difference(effects[p]) for p in names}, digits=3)
    control = stats.mean(coef[:, -1])
    trends = pd.DataFrame([{
        "parameter": p, "words": PARAMS[p], "drawn_min": agents[p].min(),
        "drawn_max": agents[p].max(), **effects[p].row("effect_over_range"), "seeds": seeds,
        "p": adjusted[PARAMS[p]].p_welch, "p_holm": adjusted[PARAMS[p]].p_holm,
        "verdict": adjusted[PARAMS[p]].verdict, "detectable": effects[p].detectable(),
    } for p in names])
    mean_earn = stats.mean(agents.groupby("seed")["earnings_per_period"].mean().to_numpy())
    fig = _figure(agents, coef, names)
    answer = _answer(trends, control, mean_earn, seeds)
    show = pd.DataFrame({
        "parameter": [f"{r.words} ({r.parameter}, drawn {r.drawn_min:.3g} to {r.drawn_max:.3g})"
                      for r in trends.itertuples()],
        "earnings per period, lowest to highest draw": stats.column_text(
            trends, "effect_over_range", seeds, 3),
        "Holm p": [stats.p_text(r.p_holm) for r in trends.itertuples()],
        "verdict": [("up" if r.effect_over_range > 0 else "down")
                    if r.verdict == "a finding" else r.verdict for r in trends.itertuples()],
    })
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("The document proposed training a bunch of agents with different learning "
                  "parameters in one global room. When learners with different parameters "
                  "trade together, which parameters earn more?"),
        experiment=(f"A market of {n} Sellers and {n} Buyers, all Q-learners learning online "
                    "with their parameters drawn per agent (`run.py market --drawn-learners`: "
                    "learning rate 0.02-0.3, discount 0.8-0.99, initial exploration 0.05-0.5, "
                    "final 0-0.05, decay 0.005-0.1 per negotiation), values and costs uniform "
                    f"on 0-100, P = T = 5, periods of 10 steps, {steps} steps, {seeds} seeds. "
                    "Within each market, a trader's earnings per period are regressed on its "
                    "five parameters and on its competitive surplus (what it would earn at the "
                    "competitive mid price: costs and values differ far more than parameters "
                    "do); each effect is the fitted change in earnings from the lowest to the "
                    "highest draw, with its interval over seeds. The five effects answer the "
                    "question together: Holm-corrected."),
        answer=answer,
        figures={"room.png": fig},
        tables={"room_trends.csv": trends},
        display=[("Fitted effect of each parameter (the others and the competitive surplus "
                  "held fixed), mean (95% interval) over seeds", show)],
        numbers={"effects": {r.parameter: r.effect_over_range for r in trends.itertuples()},
                 "mean_earnings_per_period": mean_earn.value},
        tests=tests,
    )


def _answer(trends: pd.DataFrame, control: stats.Estimate, mean_earn: stats.Estimate,
            seeds: int) -> str:
    found_rows = [r for r in trends.itertuples() if r.verdict == "a finding"]
    up = [r for r in found_rows if r.effect_over_range > 0]
    down = [r for r in found_rows if r.effect_over_range < 0]
    flat = [r for r in trends.itertuples() if r not in found_rows]

    def effect(r: Any) -> str:
        return (f"{r.words} ({r.effect_over_range:+.3f}, {r.effect_over_range_lo:+.3f} to "
                f"{r.effect_over_range_hi:+.3f}; Holm-adjusted {stats.p_text(r.p_holm)})")

    parts = [f"A trader earns {mean_earn.text(2)} per period on average, and each unit of its "
             f"competitive surplus adds {control.text(2)} to that."]
    found = []
    if up:
        found.append("earnings rise with " + ", ".join(effect(r) for r in up))
    if down:
        found.append("fall with " + ", ".join(effect(r) for r in down))
    if found:
        parts.append("Of the learning parameters, " + "; ".join(found)
                     + " (earnings per period from the lowest to the highest draw).")
    if flat:
        parts.append(("No other effect is a finding (Holm-adjusted p < 0.01): " if found else
                      "No learning parameter's effect is a finding (Holm-adjusted p < 0.01) "
                      f"over {seeds} seeds: ")
                     + "; ".join(f"{r.words} ({r.verdict}; the design would detect "
                                 f"±{r.detectable:.3f})" for r in flat) + ".")
    return " ".join(parts)


def _figure(agents: pd.DataFrame, coef: np.ndarray, names: list[str]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.4), sharey=True)
    seeds = np.sort(agents["seed"].unique())
    x_all = agents[[*names, "competitive_surplus"]].to_numpy(float)
    fitted = np.empty(len(agents))
    for g, c in zip(seeds, coef, strict=True):
        m = (agents["seed"] == g).to_numpy()
        fitted[m] = c[0] + x_all[m] @ c[1:]
    for j, (ax, p) in enumerate(zip(axes, names, strict=True)):
        x = agents[p].to_numpy(float)
        b = np.empty(len(agents))
        for g, c in zip(seeds, coef, strict=True):
            b[(agents["seed"] == g).to_numpy()] = c[1 + j]
        partial = agents["earnings_per_period"].to_numpy() - fitted + b * x  # partial residual
        edges = np.quantile(x, np.linspace(0, 1, 11))
        idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, 9)
        centres, means, halves = [], [], []
        for k in range(10):
            est = stats.mean(partial[idx == k])
            centres.append(float(x[idx == k].mean()))
            means.append(est.value)
            halves.append(est.value - est.lo)
        ax.errorbar(centres, means, yerr=halves, fmt="o", ms=3, color="tab:blue",
                    label="tenths of the draws (95%)")
        slope = stats.mean(coef[:, 1 + j])
        xs = np.linspace(x.min(), x.max(), 50)
        x0, y0 = x.mean(), float(np.mean(partial))
        ax.plot(xs, y0 + slope.value * (xs - x0), color="tab:red", label="fitted trend")
        if np.isfinite(slope.lo):
            ax.fill_between(xs, y0 + slope.lo * (xs - x0), y0 + slope.hi * (xs - x0),
                            color="tab:red", alpha=0.15, label="its 95% interval")
        ax.set_xlabel(PARAMS[p])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("earnings per period (others held fixed)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Learners with drawn parameters in one market: partial effect of each "
                 "parameter", fontsize=10)
    fig.tight_layout()
    return fig
