"""Section: what the institution costs: the same traders in bilateral bargaining, a continuous
double auction and a call market.

Gode and Sunder (1993) put zero-intelligence traders in a double auction and
found nearly full efficiency; the mixes section measures the same traders in
this project's bilateral market. Here the traders stay and the institution
changes (:mod:`market.sim.auction`): random pairs bargaining with
alternating offers, a continuous double auction with a public book, a call
market clearing at one price. Each family plays in each institution on the
same values (common random numbers), on drawn values and on a named
schedule (:mod:`market.sim.schedules`), through the batch runner.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import RunSpec, run_seed

NAME = "institutions"
TITLE = "What the institution costs: pairs, a double auction, a call market"
RELATED = (
    "Smith (1962) showed a continuous double auction with a public book converging to the "
    "competitive price. Gode and Sunder (1993) found that zero-intelligence traders "
    "constrained not to trade at a loss reach allocative efficiency close to 100 percent in "
    "a double auction, and concluded that the institution does most of the work. Cliff and "
    "Bruten (1997) showed markets in which ZI-C prices miss the competitive price, and Rust, "
    "Miller and Palmer (1994) ran the Santa Fe double auction tournament, won by Kaplan's "
    "sniper. Here the same rule of each family plays in the three institutions."
)
#: the families, in the order of the tables
FAMILIES = {
    "zi-c": "zero intelligence, constrained (ZI-C)",
    "zi-u": "zero intelligence, unconstrained (ZI-U)",
    "averaging": "averaging (the document's static traders)",
    "zip": "ZIP (Cliff 1997: margins that learn from the book)",
    "kaplan": "Kaplan's sniper",
    "qlearning": "Q-learning, online (on a book, from each trade it makes)",
    "mix": "a mix: ZI-C, averaging, ZIP and Kaplan, a quarter each",
}
SHORT = {"zi-c": "ZI-C", "zi-u": "ZI-U", "averaging": "averaging", "zip": "ZIP",
         "kaplan": "Kaplan", "qlearning": "Q-learning", "mix": "the mix"}
MIX = {"zi-c": 0.25, "averaging": 0.25, "zip": 0.25, "kaplan": 0.25}
INSTITUTIONS = ("pairs", "cda", "call")
WORDS = {"pairs": "bilateral pairs", "cda": "double auction", "call": "call market"}
#: the two value settings: drawn values on 0-100 (P = 21, every 5 units), and the symmetric
#: schedule (values and costs 0.75-3.25 by 0.25: P = 11 puts every one on the grid)
VALUES = {"drawn": (("prices", 21),), "symmetric": (("schedule", "symmetric"), ("prices", 11))}
#: Gode and Sunder's efficiencies for ZI-C in their five markets: 97.1% to 99.9%
GODE_SUNDER = (0.97, 1.0)
#: Kaplan in the mix's double auction (drawn values): the period lengths (steps) it meets, the
#: periods of each run, and the traders it is set against
KAPLAN_PERIODS = (5, 10, 25, 50)
KAPLAN_RUN = 6
KAPLAN_RIVALS = ("zi-c", "zip", "averaging")


def specs(ctx: Context, copies: int, seeds: int, steps: int
          ) -> tuple[list[RunSpec], pd.DataFrame]:
    """Every (values, family, institution) point ``seeds`` times; iteration ``i`` of every
    point has the same seed, hence the same drawn values (common random numbers). Returns
    the runs and, one row per run, what it is (``run``, ``values``, ``family``,
    ``institution``, ``iteration``)."""
    base = ctx.seed_for(NAME)
    n = 11 * copies
    out, labels, point = [], [], 0
    for values, extra in VALUES.items():
        for family in FAMILIES:
            mix = MIX if family == "mix" else {family: 1.0}
            for institution in INSTITUTIONS:
                params = (("institution", institution), ("n_buyers", n), ("n_sellers", n),
                          ("period", 10), *extra,
                          *((f"buyer_mix.{f}", v) for f, v in mix.items()),
                          *((f"seller_mix.{f}", v) for f, v in mix.items()))
                for i in range(seeds):
                    run = len(out)
                    out.append(RunSpec(run, point, i, run_seed(base, i), steps, params,
                                       fill=next(iter(mix))))
                    labels.append((run, values, family, institution, i))
                point += 1
    return out, pd.DataFrame(labels, columns=["run", "values", "family", "institution",
                                              "iteration"])


def kaplan_specs(ctx: Context, copies: int, seeds: int) -> tuple[list[RunSpec], pd.DataFrame]:
    """The mix in a double auction on drawn values, at each of :data:`KAPLAN_PERIODS`, for
    :data:`KAPLAN_RUN` periods; iteration ``i`` of every length has the same seed (the same
    traders and values). Returns the runs and what each is (``run``, ``length``: the
    period's steps, ``iteration``)."""
    base = ctx.seed_for(f"{NAME}.kaplan")
    n = 11 * copies
    out, labels = [], []
    for point, K in enumerate(KAPLAN_PERIODS):
        params = (("institution", "cda"), ("n_buyers", n), ("n_sellers", n), ("period", K),
                  *VALUES["drawn"], *((f"buyer_mix.{f}", v) for f, v in MIX.items()),
                  *((f"seller_mix.{f}", v) for f, v in MIX.items()))
        for i in range(seeds):
            out.append(RunSpec(len(out), point, i, run_seed(base, i), K * KAPLAN_RUN, params,
                               fill=next(iter(MIX))))
            labels.append((len(out) - 1, K, i))
    return out, pd.DataFrame(labels, columns=["run", "length", "iteration"])


def _lead(rival: str, K: int) -> str:
    """The label of Kaplan's lead over ``rival`` with periods of ``K`` steps (a test)."""
    return f"Kaplan minus {SHORT[rival]}, earnings per trader and period, periods of {K} steps"


def _kaplan(ctx: Context, copies: int, seeds: int
            ) -> tuple[pd.DataFrame, dict[str, stats.Difference]]:
    """Each family's earnings per trader and period in the mix, both sides together, at each
    period length, summarised (mean and 95% interval over seeds); and Kaplan's lead over each
    rival, paired by run (exploratory)."""
    todo, labels = kaplan_specs(ctx, copies, seeds)
    t = ctx.batch("report institutions: Kaplan", todo).table
    earned = [f"earnings.{side}.{f}" for f in MIX for side in ("seller", "buyer")]
    runs = labels.merge(t[["run", *earned]], on="run")
    for f in MIX:
        runs[f] = (runs[f"earnings.seller.{f}"] + runs[f"earnings.buyer.{f}"]) / 2 / KAPLAN_RUN
    rows, tests = [], {}
    for K, g in runs.groupby("length", sort=True):
        row: dict[str, Any] = {"length": int(K), "seeds": len(g)}
        for f in MIX:
            row.update(stats.mean(g[f].to_numpy(float)).row(f))
        rows.append(row)
        g = g.sort_values("iteration")
        for rival in KAPLAN_RIVALS:
            tests[_lead(rival, K)] = stats.difference(
                g["kaplan"].to_numpy(float), g[rival].to_numpy(float), paired=True)
    return pd.DataFrame(rows), tests


def run(ctx: Context) -> Section:
    copies = ctx.pick(4, 2)  # 44 + 44 traders (22 + 22 quick): a multiple of the schedule
    seeds = ctx.pick(20, 3)
    steps = ctx.pick(100, 30)
    todo, labels = specs(ctx, copies, seeds, steps)
    t = ctx.batch("report institutions", todo).table
    runs = labels.merge(
        t[["run", "efficiency", "alpha", "buyer_share", "extramarginal", "deals",
           "mean_price", "ce_price_lo", "ce_price_hi"]], on="run")
    periods = steps // 10
    runs["extramarginal_per_period"] = runs["extramarginal"] / periods
    runs["price_gap"] = runs["mean_price"] - (runs["ce_price_lo"] + runs["ce_price_hi"]) / 2
    rows = []
    for (v, family, institution), g in runs.groupby(["values", "family", "institution"],
                                                    sort=False):
        rows.append({"values": v, "family": family, "institution": institution,
                     "seeds": len(g),
                     **stats.mean(g["efficiency"].to_numpy(), (-np.inf, 1.0)).row("efficiency"),
                     **stats.mean(g["alpha"].to_numpy(), (0.0, np.inf)).row("alpha"),
                     **stats.mean(g["buyer_share"].to_numpy()).row("buyer_share"),
                     **stats.mean(g["extramarginal_per_period"].to_numpy(), (0.0, np.inf)).row(
                         "extramarginal"),
                     "price_gap": float(g["price_gap"].mean())})
    summary = pd.DataFrame(rows)
    kaplan_seeds = ctx.pick(100, 3)  # earnings per trader vary with the values each draws
    kaplan, kaplan_tests = _kaplan(ctx, copies, kaplan_seeds)
    conf, tests = _tests(runs, kaplan_tests)
    show = _display(summary, seeds)
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("Gode and Sunder found that the institution, a double auction, does most of "
                  "the work. With the same traders, what does bilateral bargaining in random "
                  "pairs cost against a double auction and a call market, and does ZI-C in "
                  "our double auction reach what they report?"),
        experiment=(f"Markets of {11 * copies} Sellers and {11 * copies} Buyers, periods of 10 "
                    f"steps, {steps} steps, in each institution: bilateral pairs (T = 5 "
                    "rounds), a continuous double auction (one activation round per step, a "
                    "public book, a crossing quote trades at the standing price) and a call "
                    "market (one call per step, one clearing price). Values: drawn uniformly "
                    "on 0-100 (P = 21 levels), and the symmetric schedule (values and costs "
                    "0.75 to 3.25 by 0.25, competitive price 2.00; P = 11). Families: "
                    + "; ".join(FAMILIES.values()) + f". {seeds} seeds per point; iteration i "
                    "of every point draws the same values (common random numbers), so "
                    "institutions are compared paired by seed. Measured over the run: "
                    "allocative efficiency, Smith's alpha (root-mean-square distance of prices "
                    "from the competitive price, in % of it), the Buyers' share of the "
                    "surplus and extramarginal deals per period (a trader the competitive "
                    "equilibrium leaves out trades). Q-learners learn online from zero tables: in "
                    "pairs from every negotiation, on a book from each trade they make (as a "
                    "negotiation of two moves). Confirmatory: for ZI-C on "
                    "each kind of values, the double auction and the call market against "
                    "pairs (efficiency), Holm-corrected. Kaplan against the others: the mix "
                    "(a quarter each of ZI-C, averaging, ZIP and Kaplan) in the double "
                    "auction on drawn values, with periods of "
                    + ", ".join(map(str, KAPLAN_PERIODS[:-1])) + f" and {KAPLAN_PERIODS[-1]} "
                    f"steps, {KAPLAN_RUN} periods a run, {kaplan_seeds} seeds per length (the "
                    "same "
                    "traders and values at every length); measured: each family's earnings "
                    "per trader and period, Sellers and Buyers together, and Kaplan's lead "
                    "over each other family, paired by run (exploratory)."),
        answer=_answer(summary, conf) + " " + _kaplan_answer(kaplan, kaplan_tests),
        figures={"institutions.png": _figure(summary), "kaplan.png": _kaplan_figure(kaplan)},
        tables={"institutions.csv": summary, "kaplan.csv": kaplan},
        tests=tests,
        display=[("Efficiency, Smith's alpha (%) and extramarginal deals per period, mean "
                  "(95% interval) over seeds", show),
                 ("Earnings per trader and period in the mix's double auction, by period "
                  "length (steps), mean (95% interval) over seeds",
                  _kaplan_display(kaplan, kaplan_seeds))],
        numbers={"efficiency": {f"{r.values}/{r.family}/{r.institution}": r.efficiency
                                for r in summary.itertuples()}},
    )


def _paired(runs: pd.DataFrame, values: str, family: str, institution: str) -> np.ndarray:
    g = runs[(runs["values"] == values) & (runs["family"] == family)
             & (runs["institution"] == institution)].sort_values("iteration")
    return g["efficiency"].to_numpy(float)


def _tests(runs: pd.DataFrame, kaplan: dict[str, stats.Difference]
           ) -> tuple[dict[str, stats.Difference], list[stats.Test]]:
    """ZI-C's efficiency in each book institution minus in pairs, per kind of values
    (confirmatory); the same for every other family, and ``kaplan``'s leads in earnings
    (exploratory)."""
    conf, explore = {}, {}
    for values in VALUES:
        for family in FAMILIES:
            pairs = _paired(runs, values, family, "pairs")
            for inst in ("cda", "call"):
                d = stats.difference(_paired(runs, values, family, inst), pairs, paired=True)
                label = f"{SHORT[family]} efficiency, {WORDS[inst]} minus pairs ({values} values)"
                (conf if family == "zi-c" else explore)[label] = d
    for values in VALUES:  # do ZIP's learned margins bring prices nearer the competitive one?
        g = {f: runs[(runs["values"] == values) & (runs["family"] == f)
                     & (runs["institution"] == "cda")].sort_values("iteration")["alpha"]
             for f in ("zip", "zi-c")}
        explore[f"Smith's alpha (%), double auction, ZIP minus ZI-C ({values} values)"] = (
            stats.difference(g["zip"].to_numpy(float), g["zi-c"].to_numpy(float),
                             paired=True))
    digits: dict[str, int] = {label: 3 for label in (*conf, *explore)}
    explore.update(kaplan)
    digits.update({label: 2 for label in kaplan})
    adjusted, tests = stats.family(conf, explore, digits=digits)
    return adjusted, tests


def _answer(summary: pd.DataFrame, conf: dict[str, stats.Difference]) -> str:
    s = summary.set_index(["values", "family", "institution"]).sort_index()

    def eff(values: str, family: str, inst: str) -> str:
        r = s.loc[(values, family, inst)]
        return f"{r.efficiency:.3f} ({r.efficiency_lo:.3f} to {r.efficiency_hi:.3f})"

    zi_cda = s.loc[("drawn", "zi-c", "cda")]
    lo, hi = GODE_SUNDER
    if zi_cda.efficiency_lo >= lo:
        reach = "inside Gode and Sunder's range (0.97 to 1.00)"
    elif zi_cda.efficiency_hi >= lo:
        reach = "an interval reaching into Gode and Sunder's range (0.97 to 1.00)"
    else:
        reach = "below Gode and Sunder's range (0.97 to 1.00)"
    parts = [f"ZI-C traders reach {eff('drawn', 'zi-c', 'cda')} in the double auction on "
             f"drawn values, {reach}, against "
             f"{eff('drawn', 'zi-c', 'pairs')} bargaining in pairs and "
             f"{eff('drawn', 'zi-c', 'call')} in the call market; on the symmetric schedule "
             f"{eff('symmetric', 'zi-c', 'cda')} (double auction), "
             f"{eff('symmetric', 'zi-c', 'pairs')} (pairs) and "
             f"{eff('symmetric', 'zi-c', 'call')} (call)."]
    for label, d in conf.items():
        parts.append(f"{label}: {d.judged(3)}.")
    extra = s.loc[("drawn", "zi-c")]
    parts.append(f"What pairs cost is who trades: extramarginal deals per period with ZI-C are "
                 f"{extra.loc['pairs', 'extramarginal']:.1f} in pairs against "
                 f"{extra.loc['cda', 'extramarginal']:.1f} in the double auction and "
                 f"{extra.loc['call', 'extramarginal']:.1f} in the call market.")
    best = {}
    for inst in INSTITUTIONS:
        g = summary[(summary["values"] == "drawn") & (summary["institution"] == inst)]
        top = g.loc[g["efficiency"].idxmax()]
        best[inst] = f"{SHORT[top.family]} ({top.efficiency:.3f})"
    parts.append("The most efficient family on drawn values: "
                 + ", ".join(f"{best[i]} in {WORDS[i]}" for i in INSTITUTIONS) + ".")
    z, c = s.loc[("drawn", "zip", "cda")], s.loc[("drawn", "zi-c", "cda")]
    parts.append(f"In the double auction, ZIP traders, whose margins learn from the book, "
                 f"trade at Smith's alpha {z.alpha:.1f}% against ZI-C's {c.alpha:.1f}% on drawn "
                 f"values (exploratory test below), at efficiency {z.efficiency:.3f}.")
    k = s.loc[("drawn", "kaplan")]
    parts.append(f"Kaplan's snipers alone, with nobody to snipe: "
                 f"efficiency {k.loc['pairs', 'efficiency']:.3f} in pairs, "
                 f"{k.loc['cda', 'efficiency']:.3f} in the double auction and "
                 f"{k.loc['call', 'efficiency']:.3f} in the call market (drawn values).")
    return " ".join(parts)


def _kaplan_answer(kaplan: pd.DataFrame, tests: dict[str, stats.Difference]) -> str:
    """Where Kaplan ranks in the mix at each period length, and its lead over ZI-C and ZIP
    with each test's verdict."""
    said = []
    for r in kaplan.to_dict("records"):
        K = r["length"]
        ranked = sorted(MIX, key=lambda f: -r[f])
        leads = "; ".join(f"over {SHORT[f]} {tests[_lead(f, K)].judged(2)}"
                          for f in ("zi-c", "zip"))
        said.append(f"With periods of {K} steps Kaplan ranks {ranked.index('kaplan') + 1} of "
                    f"{len(MIX)} ({r['kaplan']:.2f} a trader and period; most: "
                    f"{SHORT[ranked[0]]}, {r[ranked[0]]:.2f}); its lead {leads}.")
    return " ".join(["In the mix's double auction (exploratory tests below):", *said])


def _kaplan_display(kaplan: pd.DataFrame, seeds: int) -> pd.DataFrame:
    out = pd.DataFrame({"period (steps)": kaplan["length"]})
    for f in MIX:
        out[SHORT[f]] = stats.column_text(kaplan, f, seeds, 2)
    return out


def _kaplan_figure(kaplan: pd.DataFrame) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(kaplan))
    width = 0.8 / len(MIX)
    for k, f in enumerate(MIX):
        err = np.vstack([kaplan[f] - kaplan[f"{f}_lo"], kaplan[f"{f}_hi"] - kaplan[f]])
        ax.bar(x + (k - (len(MIX) - 1) / 2) * width, kaplan[f], width,
               yerr=np.nan_to_num(err), capsize=2, label=SHORT[f])
    ax.set_xticks(x, [f"{K} steps" for K in kaplan["length"]])
    ax.set_xlabel("period length")
    ax.set_ylabel("earnings per trader and period")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, ncol=len(MIX), loc="upper center", bbox_to_anchor=(0.5, -0.18),
              frameon=False)
    ax.set_title("The mix in a double auction: mean over seeds with 95% interval", fontsize=10)
    fig.tight_layout()
    return fig


def _display(summary: pd.DataFrame, seeds: int) -> pd.DataFrame:
    out = summary[["values", "family", "institution"]].copy()
    out["family"] = [SHORT[f] for f in out["family"]]
    out["institution"] = [WORDS[i] for i in out["institution"]]
    out["efficiency"] = stats.column_text(summary, "efficiency", seeds, 3)
    out["Smith's alpha (%)"] = stats.column_text(summary, "alpha", seeds, 1)
    out["extramarginal deals per period"] = stats.column_text(summary, "extramarginal",
                                                              seeds, 1)
    return out


def _figure(summary: pd.DataFrame) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharey="col")
    width = 0.8 / len(INSTITUTIONS)
    x = np.arange(len(FAMILIES))
    for row, values in enumerate(VALUES):
        for col, (m, words) in enumerate((("efficiency", "allocative efficiency"),
                                          ("alpha", "Smith's alpha (%)"))):
            ax = axes[row, col]
            for k, inst in enumerate(INSTITUTIONS):
                g = summary[(summary["values"] == values) & (summary["institution"] == inst)]
                g = g.set_index("family").loc[list(FAMILIES)]
                err = np.vstack([g[m] - g[f"{m}_lo"], g[f"{m}_hi"] - g[m]])
                ax.bar(x + (k - 1) * width, g[m], width, yerr=np.nan_to_num(err),
                       label=WORDS[inst], capsize=2)
            ax.set_xticks(x, [SHORT[f] for f in FAMILIES])
            ax.set_title(f"{words}, {values} values", fontsize=9)
            ax.grid(alpha=0.3, axis="y")
    handles, labels = axes[0, 0].get_legend_handles_labels()  # one legend, over no bars
    fig.legend(handles, labels, loc="upper center", ncol=len(INSTITUTIONS), fontsize=8,
               bbox_to_anchor=(0.5, 0.955), frameon=False)
    fig.suptitle("The same traders in three institutions: mean over seeds with 95% interval",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig
