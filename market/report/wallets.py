"""Section 5: a common wallet for several agents.

The document proposed giving "a common wallet to multiple agents". In the
market (``teams``, ``common_wallet``) each side's traders are split into
teams; with a common wallet a team pools its earnings and a learner's reward
is its team's surplus of the step per member, so a trader also gains from
its teammates' deals. A batch (:mod:`market.runs.batch`) sweeps the team
size with and without pooling, all traders Q-learners, and compares
efficiency, prices, the surplus split and earnings per trader over seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import expand, validate_grid

NAME = "wallets"
TITLE = "Common wallets"
METRICS = {
    "efficiency": "allocative efficiency",
    "mean_price": "mean transaction price",
    "seller_share": "Sellers' share of the surplus",
    "earnings_per_period": "earnings per trader per period (a team's over its size)",
}


def run(ctx: Context) -> Section:
    n = ctx.pick(60, 20)
    sizes = ctx.pick((1, 4, 15, 60), (1, 20))
    steps = ctx.pick(400, 40)
    seeds = ctx.pick(6, 2)
    grid = validate_grid({
        "n_buyers": [n], "n_sellers": [n], "teams": [n // s for s in sizes],
        "common_wallet": [False, True], "period": [10],
        "buyer_mix.qlearning": [1.0], "seller_mix.qlearning": [1.0],
    })
    res = ctx.batch("report wallets", expand(grid, seeds, ctx.seed_for(NAME), steps))
    t = res.table
    runs = pd.DataFrame({
        "team_size": n // t["teams"], "common_wallet": t["common_wallet"].astype(bool),
        "iteration": t["iteration"], "seed": t["seed"],
        "efficiency": t["efficiency"], "mean_price": t["mean_price"],
        "seller_share": t["seller_share"], "deals": t["deals"],
        "earnings_per_period": (t["earnings.seller"] + t["earnings.buyer"]) / 2 / t["periods"],
    })
    rows = []
    for (size, pooled), g in runs.groupby(["team_size", "common_wallet"], sort=True):
        row: dict[str, Any] = {"team_size": int(size), "common_wallet": bool(pooled),
                               "seeds": len(g)}
        for m in METRICS:
            row.update(stats.mean(g[m].to_numpy()).row(m))
        rows.append(row)
    summary = pd.DataFrame(rows)
    diffs = {}
    for size in sizes:
        a = runs[(runs["team_size"] == size) & runs["common_wallet"]]
        b = runs[(runs["team_size"] == size) & ~runs["common_wallet"]]
        diffs[size] = {m: stats.difference(a[m].to_numpy(), b[m].to_numpy()) for m in METRICS}
    diff_df = pd.DataFrame([{"team_size": s, "metric": m, **d.diff.row("pooled_minus_not"),
                             "p_welch": d.p_welch} for s, ds in diffs.items()
                            for m, d in ds.items()])
    fig = _figure(summary, sizes)
    answer = _answer(summary, diffs, sizes, n)
    show = pd.DataFrame({
        "team size": summary["team_size"],
        "common wallet": np.where(summary["common_wallet"], "yes", "no"),
        "efficiency": stats.column_text(summary, "efficiency", seeds, 3),
        "mean price": [f"{r.mean_price:.1f}" for r in summary.itertuples()],
        "Sellers' share": [f"{r.seller_share:.3f}" for r in summary.itertuples()],
        "earnings per trader per period": stats.column_text(summary, "earnings_per_period",
                                                            seeds, 2),
    })
    return Section(
        name=NAME, title=TITLE,
        question=("The document proposed giving a common wallet to several agents. What does "
                  "pooling earnings in teams do to efficiency, prices and what each trader "
                  "earns, and does it depend on the size of the team?"),
        experiment=(f"A market of {n} Sellers and {n} Buyers, all Q-learners (the market's "
                    "default learning parameters), values and costs uniform on 0-100, P = T = 5, "
                    f"periods of 10 steps, {steps} steps. Each side is split into teams of "
                    f"{', '.join(map(str, sizes))} traders (`run.py market --teams K`), with and "
                    "without a common wallet (`--common-wallet`: a learner's reward is its "
                    f"team's surplus of the step per member); {seeds} seeds per point, through "
                    "the batch runner (`run.py batch --param teams=... --param "
                    "common_wallet=false,true`). Without a common wallet the teams are labels "
                    "only, so those runs are the control."),
        answer=answer,
        figures={"wallets.png": fig},
        tables={"wallets.csv": summary, "wallets_tests.csv": diff_df},
        display=[("Mean (95% interval) over seeds per team size, with and without a common "
                  "wallet", show)],
        numbers={f"efficiency_size_{s}_pooled_minus_not": diffs[s]["efficiency"].diff.value
                 for s in sizes},
    )


def _answer(summary: pd.DataFrame, diffs: dict[int, dict[str, stats.Difference]],
            sizes: tuple[int, ...], n: int) -> str:
    def at(size: int, pooled: bool) -> pd.Series:
        return summary[(summary["team_size"] == size)
                       & (summary["common_wallet"] == pooled)].iloc[0]

    big = sizes[-1]
    e = diffs[big]["efficiency"]
    earn = diffs[big]["earnings_per_period"]
    price = diffs[big]["mean_price"]
    s1 = (f"Pooling in teams of {big} changes efficiency by {e.text(3)} against the same "
          f"teams without a common wallet ({at(big, True)['efficiency']:.3f} against "
          f"{at(big, False)['efficiency']:.3f}: "
          f"{'a real difference' if e.significant else 'no difference shown'}), earnings per "
          f"trader per period by {earn.text(2)} and the mean price by {price.text(1)}.")
    sig = [s for s in sizes if diffs[s]["efficiency"].significant]
    trend = [at(s, True)["efficiency"] - at(s, False)["efficiency"] for s in sizes]
    s2 = ("Across team sizes the pooled-minus-individual efficiency goes "
          + ", ".join(f"{d:+.3f} ({s})" for d, s in zip(trend, sizes, strict=True))
          + "; it is significant at the 5% level for "
          + (f"team size(s) {', '.join(map(str, sig))}" if sig else "no team size") + ".")
    small = diffs[sizes[0]]["efficiency"]
    s3 = f"Teams of 1 are the check: a common wallet then changes nothing ({small.text(3)})."
    if small.significant:
        s3 += " Here it differs, which says the seeds are too few to trust the rest."
    why = ""
    if sig:
        why = (" A pooled reward is the team's surplus per member, so a learner's own action "
               "moves its reward by only 1/size of its own gain: the learning signal is "
               "diluted by its teammates' deals.")
    return " ".join([s1, s2, s3]) + why


def _figure(summary: pd.DataFrame, sizes: tuple[int, ...]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(4.2 * len(METRICS), 3.6))
    for ax, (m, words) in zip(axes, METRICS.items(), strict=True):
        for pooled, colour in ((False, "tab:gray"), (True, "tab:green")):
            s = summary[summary["common_wallet"] == pooled].sort_values("team_size")
            x = s["team_size"].to_numpy(float)
            ax.plot(x, s[m], marker="o", color=colour,
                    label="common wallet" if pooled else "individual wallets")
            ax.fill_between(x, s[f"{m}_lo"], s[f"{m}_hi"], color=colour, alpha=0.2)
        ax.set_xscale("log")
        ax.set_xticks(list(sizes), [str(s) for s in sizes])
        ax.set_xlabel("traders per team")
        ax.set_title(words, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Team size, with and without a common wallet (mean over seeds, 95% interval)",
                 fontsize=10)
    fig.tight_layout()
    return fig
