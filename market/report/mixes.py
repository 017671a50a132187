"""Section 7: mixed populations against the competitive band (Gode and Sunder's question).

Gode and Sunder (1993) found that a double auction of zero-intelligence
traders, constrained only not to trade at a loss, reaches nearly full
efficiency: the market's rules, not the traders' intelligence, do the work.
Here the market is bilateral bargaining in random pairs. For each of four
families (the document's averaging, constrained zero intelligence, a
time-dependent concession, Q-learning) its share of both sides goes from 0
to 1, the rest split equally among the other three; batch runs
(:mod:`market.runs.batch`, per-step data) measure allocative efficiency and
how close transaction prices come to the competitive equilibrium (Smith's
convergence coefficient: the root-mean-square distance of prices from the
competitive mid price, in percent of it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import RunSpec, run_seed

NAME = "mixes"
TITLE = "Mixed populations and the competitive band"
FAMILIES = {
    "averaging": "averaging (the document's static traders)",
    "zi-c": "zero intelligence, constrained (Gode and Sunder)",
    "linear": "time-dependent (linear concession)",
    "qlearning": "Q-learning",
}
#: the same, short, for sentences
SHORT = {"averaging": "averaging", "zi-c": "zero intelligence", "linear": "linear concession",
         "qlearning": "Q-learning"}
PRICES = 21  # a 5-unit grid on 0-100: prices can come near the competitive band


def _mix(family: str, share: float) -> dict[str, float]:
    rest = (1.0 - share) / (len(FAMILIES) - 1)
    return {f: (share if f == family else rest) for f in FAMILIES}


def specs(ctx: Context, n: int, shares: tuple[float, ...], seeds: int,
          steps: int) -> list[RunSpec]:
    """Every (family, share) point ``seeds`` times, as batch runs with per-run seeds."""
    base = ctx.seed_for(NAME)
    out, run = [], 0
    for p, (family, share) in enumerate((f, s) for f in FAMILIES for s in shares):
        mix = _mix(family, share)
        params = (("n_buyers", n), ("n_sellers", n), ("prices", PRICES), ("period", 10),
                  *((f"buyer_mix.{f}", v) for f, v in mix.items()),
                  *((f"seller_mix.{f}", v) for f, v in mix.items()),
                  ("report_family", family), ("report_share", share))
        for i in range(seeds):
            out.append(RunSpec(run, p, i, run_seed(base, run), steps, params))
            run += 1
    return out


def _convergence(steps: pd.DataFrame, runs: np.ndarray) -> pd.DataFrame:
    """Per run, over its second half: Smith's alpha and the mean price's distance from the
    competitive mid price."""
    s = steps[steps["step"] > 0]
    rows = []
    for run in runs:
        g = s[s["run"] == run]
        g = g[g["step"] > g["step"].max() / 2]
        d = g["deals"].to_numpy(float)
        mid = ((g["ce_price_lo"] + g["ce_price_hi"]) / 2).to_numpy(float)
        has = d > 0
        mean, sd = g["mean_price"].to_numpy(float)[has], g["price_std"].to_numpy(float)[has]
        sq = (d[has] * (sd**2 + (mean - mid[has]) ** 2)).sum() / max(d[has].sum(), 1)
        ref = float(np.mean(mid))
        rows.append({"run": int(run), "alpha": 100 * np.sqrt(sq) / ref,
                     "price_gap": float((d[has] * (mean - mid[has])).sum() / max(d[has].sum(),
                                                                                  1))})
    return pd.DataFrame(rows)


def run(ctx: Context) -> Section:
    n = ctx.pick(60, 6)
    shares = ctx.pick((0.0, 0.25, 0.5, 0.75, 1.0), (0.0, 1.0))
    seeds = ctx.pick(3, 2)
    steps = ctx.pick(200, 10)
    todo = specs(ctx, n, shares, seeds, steps)
    res = _batch(ctx, todo)
    t = res.table
    conv = _convergence(res.steps, t["run"].to_numpy())
    runs = t[["run", "iteration", "efficiency", "deals", "mean_price"]].merge(conv, on="run")
    runs["family"] = [dict(s.params)["report_family"] for s in todo]
    runs["share"] = [dict(s.params)["report_share"] for s in todo]
    rows = []
    for (family, share), g in runs.groupby(["family", "share"], sort=False):
        rows.append({"family": family, "share": share, "seeds": len(g),
                     **stats.mean(g["efficiency"].to_numpy()).row("efficiency"),
                     **stats.mean(g["alpha"].to_numpy()).row("alpha"),
                     **stats.mean(g["price_gap"].to_numpy()).row("price_gap")})
    summary = pd.DataFrame(rows)
    trends = pd.DataFrame([{"family": f, **stats.trend(g["share"], g["efficiency"]).row(
        "efficiency_per_share"), **stats.trend(g["share"], g["alpha"]).row("alpha_per_share")}
        for f, g in runs.groupby("family", sort=False)])
    fig = _figure(summary, shares)
    answer = _answer(summary, trends, shares, runs)
    pure = summary[summary["share"] == shares[-1]].reset_index(drop=True)
    show = pd.DataFrame({
        "traders": [FAMILIES[f] for f in pure["family"]],
        "efficiency, all of this kind": stats.column_text(pure, "efficiency", seeds, 3),
        "Smith's alpha (%)": stats.column_text(pure, "alpha", seeds, 1),
        "mean price minus competitive mid": [f"{r.price_gap:+.1f}" for r in pure.itertuples()],
        "efficiency per unit of share": stats.column_text(trends, "efficiency_per_share",
                                                          seeds, 3),
    })
    return Section(
        name=NAME, title=TITLE,
        question=("Gode and Sunder asked whether a market's efficiency comes from its rules or "
                  "from its traders' intelligence. In our bilateral market, how efficient are "
                  "mixes of averaging, zero-intelligence, time-dependent and learning traders, "
                  "and how close do their prices come to the competitive band?"),
        experiment=(f"Markets of {n} Sellers and {n} Buyers, values and costs uniform on "
                    f"0-100, P = {PRICES} price levels (every 5 units), T = 5 rounds, periods "
                    f"of 10 steps, {steps} steps. For each family its share of both sides is "
                    f"{', '.join(f'{s:g}' for s in shares)}, the rest split equally among the "
                    f"other three ({seeds} seeds per point, through the batch runner with "
                    "per-step data). Measured: allocative efficiency over the run, and over its "
                    "second half Smith's convergence coefficient alpha (root-mean-square "
                    "distance of transaction prices from the competitive mid price, in % of "
                    "it; 0 = every deal at the competitive price) and the mean price's "
                    "distance from that mid price. The efficiency trend per family is a "
                    "least-squares slope over runs with its interval."),
        answer=answer,
        figures={"mixes.png": fig},
        tables={"mixes.csv": summary, "mixes_trends.csv": trends},
        display=[("Homogeneous markets (share 1), mean (95% interval) over seeds, and the "
                  "efficiency trend as the family's share goes from 0 to 1", show)],
        numbers={"efficiency_pure": {r.family: r.efficiency for r in pure.itertuples()},
                 "alpha_pure": {r.family: r.alpha for r in pure.itertuples()}},
    )


def _batch(ctx: Context, todo: list[RunSpec]) -> Any:
    """The runs, through the batch runner; the ``report_*`` labels are not model parameters."""
    clean = [RunSpec(s.run, s.point, s.iteration, s.seed, s.steps,
                     tuple(p for p in s.params if not p[0].startswith("report_")), s.fill)
             for s in todo]
    return ctx.batch("report mixes", clean, per_step=True)


def _answer(summary: pd.DataFrame, trends: pd.DataFrame, shares: tuple[float, ...],
            runs: pd.DataFrame) -> str:
    pure = summary[summary["share"] == shares[-1]].set_index("family")
    best = pure["efficiency"].idxmax()
    worst = pure["efficiency"].idxmin()
    closest = pure["alpha"].idxmin()
    zi = pure.loc["zi-c"]
    s1 = (f"Markets of one kind reach efficiency from {pure.loc[worst, 'efficiency']:.3f} "
          f"({SHORT[worst]}) to {pure.loc[best, 'efficiency']:.3f} ({SHORT[best]}); "
          f"constrained zero-intelligence traders reach {zi['efficiency']:.3f} "
          f"({zi['efficiency_lo']:.3f} to {zi['efficiency_hi']:.3f}).")
    full = runs[runs["share"] == shares[-1]]
    if best == "zi-c":
        second = pure["efficiency"].drop("zi-c").idxmax()
        d = stats.difference(full.loc[full["family"] == "zi-c", "efficiency"].to_numpy(),
                             full.loc[full["family"] == second, "efficiency"].to_numpy())
        s1 += (" As in Gode and Sunder's double auction, traders with no intelligence beyond the "
               "budget constraint are the most efficient here"
               + (f", though not significantly above {SHORT[second]} ({d.text(3)})."
                  if not d.significant else f" ({d.text(3)} above {SHORT[second]})."))
    else:
        d = stats.difference(full.loc[full["family"] == best, "efficiency"].to_numpy(),
                             full.loc[full["family"] == "zi-c", "efficiency"].to_numpy())
        if d.significant:
            s1 += (f" Unlike Gode and Sunder's double auction, zero intelligence falls short of "
                   f"the best ({SHORT[best]}, {d.text(3)} more): in random pairs a trader "
                   "meets one partner at a time, so who trades depends on the strategy, not only "
                   "on the constraint.")
        else:
            s1 += (f" As in Gode and Sunder's double auction, traders with no intelligence "
                   f"beyond the budget constraint are not shown to do worse than the best "
                   f"({SHORT[best]}: {d.text(3)} more).")
    s2 = (f"Prices come closest to the competitive band with {SHORT[closest]} traders "
          f"(Smith's alpha {pure.loc[closest, 'alpha']:.1f}%, against "
          f"{pure['alpha'].max():.1f}% with {SHORT[pure['alpha'].idxmax()]}).")
    up = [r.family for r in trends.itertuples() if r.efficiency_per_share_lo > 0]
    down = [r.family for r in trends.itertuples() if r.efficiency_per_share_hi < 0]
    if up or down:
        s3 = ("As a family's share grows, efficiency "
              + " and ".join(x for x in (
                  "rises with " + ", ".join(SHORT[f] for f in up) if up else "",
                  "falls with " + ", ".join(SHORT[f] for f in down) if down else "") if x)
              + " (slopes whose interval excludes 0); for the others no trend is shown.")
    else:
        s3 = ("No family's share moves efficiency by a trend distinguishable from 0: the mix "
              "matters less than the seeds here.")
    return " ".join([s1, s2, s3])


def _figure(summary: pd.DataFrame, shares: tuple[float, ...]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for ax, m, words in ((axes[0], "efficiency", "allocative efficiency"),
                         (axes[1], "alpha", "Smith's alpha (%), second half"),
                         (axes[2], "price_gap", "mean price minus competitive mid")):
        for family in FAMILIES:
            s = summary[summary["family"] == family].sort_values("share")
            (line,) = ax.plot(s["share"], s[m], marker="o", label=FAMILIES[family])
            ax.fill_between(s["share"], s[f"{m}_lo"], s[f"{m}_hi"], color=line.get_color(),
                            alpha=0.15)
        ax.set_xlabel("share of the family on both sides (rest: the other three equally)")
        ax.set_title(words, fontsize=9)
        ax.set_xticks(list(shares))
        ax.grid(alpha=0.3)
    axes[2].axhline(0, color="0.3", lw=0.8)
    axes[0].legend(fontsize=7)
    fig.suptitle("Mixed populations: mean over seeds with 95% interval", fontsize=10)
    fig.tight_layout()
    return fig
