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
#: the literature this section's answer sits in (with citations)
RELATED = (
    'A reward shared by a team is the "team game" payoff whose learnability falls as the '
    "team grows: each member's own action moves it by a share that shrinks with the size of "
    'the team (Wolpert and Tumer 2002, who propose difference rewards instead). Whether and '
    'how much that costs here is what the efficiency difference and its trend over team '
    'size measure.'
)
#: measures with bounds get intervals inside them
BOUNDS = {"efficiency": (0.0, 1.0), "seller_share": (0.0, 1.0)}
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
    seeds = ctx.pick(24, 4)
    grid = validate_grid({
        "n_buyers": [n], "n_sellers": [n], "teams": [n // s for s in sizes],
        "common_wallet": [False, True], "period": [10],
        "buyer_mix.qlearning": [1.0], "seller_mix.qlearning": [1.0],
    })
    # common random numbers: iteration i of every point draws the same market, so pooled and
    # individual wallets compare seed by seed, and teams of 1 must match exactly
    res = ctx.batch("report wallets", expand(grid, seeds, ctx.seed_for(NAME), steps,
                                             common_seeds=True))
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
            row.update(stats.mean(g[m].to_numpy(), BOUNDS.get(m)).row(m))
        rows.append(row)
    summary = pd.DataFrame(rows)
    diffs = {}
    for size in sizes:
        a = runs[(runs["team_size"] == size) & runs["common_wallet"]].sort_values("iteration")
        b = runs[(runs["team_size"] == size) & ~runs["common_wallet"]].sort_values("iteration")
        diffs[size] = {m: stats.difference(a[m].to_numpy(), b[m].to_numpy(), paired=True)
                       for m in METRICS}
    trend = _size_trend(runs)
    big = sizes[-1]
    conf, tests = stats.family(
        {f"efficiency, pooled minus individual, teams of {big}": diffs[big]["efficiency"],
         "trend of that difference per doubling of the team": stats.as_difference(trend)},
        {f"{METRICS[m]}, pooled minus individual, teams of {s}": diffs[s][m]
         for s in sizes for m in METRICS if (s, m) != (big, "efficiency")}, digits=3)
    diffs[big]["efficiency"] = conf[f"efficiency, pooled minus individual, teams of {big}"]
    trend_test = conf["trend of that difference per doubling of the team"]
    diff_df = pd.DataFrame([{"team_size": s, "metric": m, **d.diff.row("pooled_minus_not"),
                             "p": d.p_welch, "p_holm": d.p_holm} for s, ds in diffs.items()
                            for m, d in ds.items()])
    same = _teams_of_one_match(runs) if sizes[0] == 1 else None
    fig = _figure(summary, sizes)
    answer = _answer(summary, diffs, sizes, trend_test, same)
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
        name=NAME, title=TITLE, related=RELATED,
        question=("The document proposed giving a common wallet to several agents. What does "
                  "pooling earnings in teams do to efficiency, prices and what each trader "
                  "earns, and does it depend on the size of the team?"),
        experiment=(f"A market of {n} Sellers and {n} Buyers, all Q-learners (the market's "
                    "default learning parameters), values and costs uniform on 0-100, P = T = 5, "
                    f"periods of 10 steps, {steps} steps. Each side is split into teams of "
                    f"{', '.join(map(str, sizes))} traders (`run.py market --teams K`), with and "
                    "without a common wallet (`--common-wallet`: a learner's reward is its "
                    f"team's surplus of the step per member); {seeds} seeds per point under "
                    "common random numbers (iteration i of every point draws the same market), "
                    "through the batch runner (`run.py batch --common-seeds --param teams=... "
                    "--param common_wallet=false,true`). Without a common wallet the teams are "
                    "labels only, so those runs are the control, compared seed by seed (paired "
                    "t). Confirmatory: the efficiency difference in the largest teams and its "
                    "trend over log2(team size), fitted per seed; Holm-corrected."),
        answer=answer,
        figures={"wallets.png": fig},
        tables={"wallets.csv": summary, "wallets_tests.csv": diff_df},
        display=[("Mean (95% interval) over seeds per team size, with and without a common "
                  "wallet", show)],
        numbers={f"efficiency_size_{s}_pooled_minus_not": diffs[s]["efficiency"].diff.value
                 for s in sizes},
        tests=tests,
    )


def _size_trend(runs: pd.DataFrame) -> stats.Estimate:
    """Slope of the pooled-minus-individual efficiency on log2(team size), fitted per seed
    (each seed's markets are paired across sizes) with its t-interval over seeds."""
    wide = runs.pivot_table(index=["iteration", "team_size"], columns="common_wallet",
                            values="efficiency").reset_index()
    d = (wide[True] - wide[False]).to_numpy(float)
    coef = stats.slopes(np.log2(wide["team_size"].to_numpy(float))[:, None], d,
                        wide["iteration"].to_numpy())
    return stats.mean(coef[:, 1])


def _teams_of_one_match(runs: pd.DataFrame) -> bool:
    """Whether teams of one with and without a common wallet are the same markets, seed by
    seed (they should be: a team of one pools its own reward)."""
    one = runs[runs["team_size"] == 1].sort_values("iteration")
    a, b = one[one["common_wallet"]], one[~one["common_wallet"]]
    return all(np.array_equal(a[m].to_numpy(), b[m].to_numpy(), equal_nan=True)
               for m in ("efficiency", "mean_price", "deals"))


def _answer(summary: pd.DataFrame, diffs: dict[int, dict[str, stats.Difference]],
            sizes: tuple[int, ...], trend: stats.Difference, same: bool | None) -> str:
    def at(size: int, pooled: bool) -> pd.Series:
        return summary[(summary["team_size"] == size)
                       & (summary["common_wallet"] == pooled)].iloc[0]

    big = sizes[-1]
    e = diffs[big]["efficiency"]
    earn = diffs[big]["earnings_per_period"]
    price = diffs[big]["mean_price"]
    s1 = (f"Against the same markets without a common wallet, pooling in teams of {big} "
          f"changes efficiency ({at(big, True)['efficiency']:.3f} against "
          f"{at(big, False)['efficiency']:.3f}) by {e.judged(3)}; earnings per trader per "
          f"period by {earn.judged(2)}; the mean price by {price.judged(1)}.")
    steps = [at(s, True)["efficiency"] - at(s, False)["efficiency"] for s in sizes]
    s2 = ("Across team sizes the pooled-minus-individual efficiency goes "
          + ", ".join(f"{d:+.3f} ({s})" for d, s in zip(steps, sizes, strict=True))
          + f"; per doubling of the team it changes by {trend.judged(4)}.")
    parts = [s1, s2]
    if same is not None:
        one = diffs[sizes[0]]["efficiency"]
        parts.append("Teams of 1 are the check: under common random numbers, a team of one "
                     "pools only its own reward, and the markets with and without a common "
                     "wallet are " + ("identical seed by seed, as they must be (an earlier "
                                      "version of this report drew every point with seeds of "
                                      "its own, and its teams of 1 differed by chance alone)."
                                      if same else
                                      f"not identical (efficiency {one.text(3)}), which "
                                      "says the two settings differ in more than the wallet."))
    if e.significant and e.diff.value < 0:
        parts.append("A pooled reward is the team's surplus per member, so a learner's own "
                     "action moves its reward by only 1/size of its own gain: the learning "
                     "signal is diluted by its teammates' deals.")
    return " ".join(parts)


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
