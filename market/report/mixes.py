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
#: the literature this section's answer sits in (with citations)
RELATED = (
    'Gode and Sunder (1993) found that a double auction of zero-intelligence traders '
    'constrained not to trade at a loss reaches allocative efficiency "close to 100 '
    'percent", far above unconstrained ones, and concluded that the institution, not the '
    "traders' intelligence, does most of the work. Their institution is a double auction "
    'with a public order book; this market is bilateral bargaining in random pairs, where a '
    'trader meets one partner at a time and extramarginal pairs can trade, so the '
    'comparison with ZI-U here says what the constraint does in this institution; the '
    'next section puts the same traders in a double auction and a call market and '
    'measures what the institution costs. Smith (1962) defined the '
    'convergence coefficient alpha used for prices; Cliff and Bruten (1997) showed that '
    'ZI-C prices need not converge to the competitive band, as seen here.'
)
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
#: Gode and Sunder's own control: zero intelligence without the budget constraint
CONTROL = "zi-u"
CONTROL_WORDS = "zero intelligence, unconstrained (Gode and Sunder's control)"


def _mix(family: str, share: float) -> dict[str, float]:
    rest = (1.0 - share) / (len(FAMILIES) - 1)
    return {f: (share if f == family else rest) for f in FAMILIES}


def specs(ctx: Context, n: int, shares: tuple[float, ...], seeds: int,
          steps: int) -> list[RunSpec]:
    """Every (family, share) point ``seeds`` times, and Gode and Sunder's control (a market
    of unconstrained zero-intelligence traders, ``zi-u``), as batch runs under common random
    numbers: iteration ``i`` of every point draws the same values and costs."""
    base = ctx.seed_for(NAME)
    points = [(f, s, _mix(f, s)) for f in FAMILIES for s in shares]
    points.append((CONTROL, 1.0, {CONTROL: 1.0}))
    out, run = [], 0
    for p, (family, share, mix) in enumerate(points):
        params = (("n_buyers", n), ("n_sellers", n), ("prices", PRICES), ("period", 10),
                  *((f"buyer_mix.{f}", v) for f, v in mix.items()),
                  *((f"seller_mix.{f}", v) for f, v in mix.items()),
                  ("report_family", family), ("report_share", share))
        for i in range(seeds):
            out.append(RunSpec(run, p, i, run_seed(base, i), steps, params))
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
        if not has.any():  # no deal in the second half: nothing to measure
            rows.append({"run": int(run), "alpha": np.nan, "price_gap": np.nan})
            continue
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
    seeds = ctx.pick(20, 3)
    steps = ctx.pick(200, 40)
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
                     # at most 1; below 0 only where loss-making deals are allowed (ZI-U)
                     **stats.mean(g["efficiency"].to_numpy(), (-np.inf, 1.0)).row("efficiency"),
                     **stats.mean(g["alpha"].to_numpy(), (0.0, np.inf)).row("alpha"),
                     **stats.mean(g["price_gap"].to_numpy()).row("price_gap")})
    summary = pd.DataFrame(rows)
    mixed = runs[runs["family"] != CONTROL]
    fitted = _mixture_fit(mixed, shares)
    trends = pd.DataFrame([{"family": f, **stats.mean(fitted[:, k], (-np.inf, 1.0)).row(
        "efficiency_pure_fit")} for k, f in enumerate(FAMILIES)])
    conf, family_tests = _tests(runs, fitted, shares)
    fig = _figure(summary[summary["family"] != CONTROL], shares)
    answer = _answer(summary, trends, shares, conf)
    pure = summary[summary["share"] == shares[-1]].reset_index(drop=True)
    fit_text = dict(zip(trends["family"], stats.column_text(trends, "efficiency_pure_fit",
                                                            seeds, 3), strict=True))
    show = pd.DataFrame({
        "traders": [FAMILIES.get(f, CONTROL_WORDS) for f in pure["family"]],
        "efficiency, all of this kind": stats.column_text(pure, "efficiency", seeds, 3),
        "Smith's alpha (%)": stats.column_text(pure, "alpha", seeds, 1),
        "mean price minus competitive mid": [f"{r.price_gap:+.1f}" if np.isfinite(r.price_gap)
                                             else "n/a" for r in pure.itertuples()],
        "pure-market efficiency fitted from every mix": [fit_text.get(f, "")
                                                         for f in pure["family"]],
    })
    return Section(
        name=NAME, title=TITLE, related=RELATED,
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
                    "distance from that mid price. Gode and Sunder's own control, a market of "
                    "unconstrained zero-intelligence traders (ZI-U: quotes anywhere on the "
                    "grid, loss-making deals allowed), runs beside them. Every point's seed i "
                    "draws the same values and costs (common random numbers). Because the "
                    "shares sum to one, the mixes are modelled as a Scheffé mixture "
                    "(efficiency = the sum over families of share x coefficient, no "
                    "intercept), fitted per seed: a family's coefficient is the efficiency of "
                    "a pure market of it, estimated from every mix. Confirmatory: ZI-C against "
                    "ZI-U (does the constraint do the work?) and ZI-C against the most "
                    "efficient other pure market, Holm-corrected."),
        answer=answer,
        figures={"mixes.png": fig},
        tables={"mixes.csv": summary, "mixes_trends.csv": trends},
        tests=family_tests,
        display=[("Homogeneous markets (share 1), mean (95% interval) over seeds, and the "
                  "pure market's efficiency fitted from every mix (Scheffé model)", show)],
        numbers={"efficiency_pure": {r.family: r.efficiency for r in pure.itertuples()},
                 "alpha_pure": {r.family: r.alpha for r in pure.itertuples()}},
    )


def _batch(ctx: Context, todo: list[RunSpec]) -> Any:
    """The runs, through the batch runner; the ``report_*`` labels are not model parameters."""
    clean = [RunSpec(s.run, s.point, s.iteration, s.seed, s.steps,
                     tuple(p for p in s.params if not p[0].startswith("report_")), s.fill)
             for s in todo]
    return ctx.batch("report mixes", clean, per_step=True)


def _mixture_fit(runs: pd.DataFrame, shares: tuple[float, ...]) -> np.ndarray:
    """Per seed, the Scheffé mixture model's coefficients: efficiency ~ sum of share_f x
    beta_f over the families (no intercept: the shares sum to one). Returns (seeds, families)."""
    x = np.zeros((len(runs), len(FAMILIES)))
    for k, f in enumerate(FAMILIES):
        own = (runs["family"] == f).to_numpy()
        share = runs["share"].to_numpy(float)
        x[:, k] = np.where(own, share, (1 - share) / (len(FAMILIES) - 1))
    y = runs["efficiency"].to_numpy(float)
    it = runs["iteration"].to_numpy()
    out = []
    for i in np.unique(it):
        m = it == i
        coef, *_ = np.linalg.lstsq(x[m], y[m], rcond=None)
        out.append(coef)
    return np.asarray(out)


def _pure(runs: pd.DataFrame, family: str) -> np.ndarray:
    g = runs[(runs["family"] == family) & (runs["share"] == 1.0)].sort_values("iteration")
    return g["efficiency"].to_numpy(float)


def _tests(runs: pd.DataFrame, fitted: np.ndarray, shares: tuple[float, ...]
           ) -> tuple[dict[str, stats.Difference], list[stats.Test]]:
    """ZI-C against ZI-U and against the best other pure market (confirmatory, paired by
    seed); the fitted pure-market contrasts against averaging (exploratory)."""
    means = {f: _pure(runs, f).mean() for f in FAMILIES}
    best = max((f for f in FAMILIES if f != "zi-c"), key=lambda f: means[f])
    conf = {
        "control": stats.difference(_pure(runs, "zi-c"), _pure(runs, CONTROL), paired=True),
        "best": stats.difference(_pure(runs, "zi-c"), _pure(runs, best), paired=True),
    }
    labels = {"control": "pure ZI-C minus pure ZI-U (Gode and Sunder's control)",
              "best": f"pure ZI-C minus pure {SHORT[best]} (the most efficient other)"}
    keys = list(FAMILIES)
    alpha = {f: runs[(runs["family"] == f) & (runs["share"] == 1.0)].sort_values("iteration")[
        "alpha"].to_numpy(float) for f in FAMILIES}
    order = sorted((f for f in FAMILIES if np.isfinite(alpha[f]).all()),
                   key=lambda f: alpha[f].mean())
    explore = {}
    if len(order) >= 2:
        gap = stats.difference(alpha[order[0]], alpha[order[1]], paired=True)
        explore[f"Smith's alpha, pure {SHORT[order[0]]} minus pure {SHORT[order[1]]} (the "
                f"two closest to the band)"] = gap
    explore |= {f"fitted pure {SHORT[f]} minus fitted pure averaging": stats.difference(
        fitted[:, keys.index(f)], fitted[:, 0], paired=True) for f in keys[1:]}
    adjusted, tests = stats.family({labels[k]: d for k, d in conf.items()}, explore, digits=3)
    out = {k: adjusted[labels[k]] for k in conf}
    if len(order) >= 2:
        out["alpha_gap"] = gap
    return out, tests


def _answer(summary: pd.DataFrame, trends: pd.DataFrame, shares: tuple[float, ...],
            conf: dict[str, Any]) -> str:
    pure = summary[summary["share"] == shares[-1]].set_index("family")
    kinds = pure.drop(CONTROL)
    best = kinds["efficiency"].idxmax()
    worst = kinds["efficiency"].idxmin()
    zi, zu = pure.loc["zi-c"], pure.loc[CONTROL]
    s1 = (f"Markets of one kind reach efficiency from {kinds.loc[worst, 'efficiency']:.3f} "
          f"({SHORT[worst]}) to {kinds.loc[best, 'efficiency']:.3f} ({SHORT[best]}); "
          f"constrained zero-intelligence traders reach {zi['efficiency']:.3f} "
          f"({zi['efficiency_lo']:.3f} to {zi['efficiency_hi']:.3f}), unconstrained ones "
          f"{zu['efficiency']:.3f} ({zu['efficiency_lo']:.3f} to {zu['efficiency_hi']:.3f}).")
    c, b = conf["control"], conf["best"]
    if c.significant and c.diff.value > 0:
        s2 = (f"The budget constraint does the work here as in Gode and Sunder's double "
              f"auction: ZI-C is above ZI-U by {c.judged(3)}.")
    else:
        s2 = f"ZI-C against ZI-U: {c.judged(3)}."
    other = SHORT[kinds["efficiency"].drop("zi-c").idxmax()]  # the family _tests compared
    if b.significant:
        s3 = (f"Against the most efficient other pure market ({other}) ZI-C is "
              f"{'above' if b.diff.value > 0 else 'below'} by {b.judged(3)}"
              + (": in random pairs a trader meets one partner at a time, so who trades "
                 "depends on the strategy, not only on the constraint." if b.diff.value < 0
                 else "."))
    else:
        s3 = f"ZI-C against the most efficient other pure market ({other}): {b.judged(3)}."
    parts = [s1, s2, s3]
    alpha = kinds["alpha"].dropna().sort_values()
    if len(alpha) >= 2 and "alpha_gap" in conf:
        closest, second, farthest = alpha.index[0], alpha.index[1], alpha.index[-1]
        d = conf["alpha_gap"]
        lead = (f"Prices come closest to the competitive band with {SHORT[closest]} traders"
                if d.significant else
                f"Prices come closest to the competitive band with {SHORT[closest]} and "
                f"{SHORT[second]} traders, not told apart")
        parts.append(f"{lead} (Smith's alpha {alpha[closest]:.1f}% and {alpha[second]:.1f}%: "
                     f"{d.judged(1)}), against {alpha[farthest]:.1f}% with {SHORT[farthest]}.")
    fit = trends.set_index("family")
    parts.append("Fitted from every mix (the Scheffé model), a pure market's efficiency is "
                 + ", ".join(f"{fit.loc[f, 'efficiency_pure_fit']:.3f} ({SHORT[f]})"
                             for f in FAMILIES)
                 + "; the tests below compare each with averaging.")
    return " ".join(parts)


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
