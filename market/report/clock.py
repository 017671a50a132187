"""Section 6: a clock instead of a number of transactions (the market clock).

The document proposed limiting "the number of time steps instead of
transactions", expecting that "closing a transaction earlier is a real
improvement". In the market each trader trades at most one unit per period of
K steps; with the clock (``clock=True``) a Q-learner observes the steps left
in the period and values a failed negotiation at what waiting is still worth
(nothing at the last step). A batch (:mod:`market.runs.batch`, per-step data)
runs Q-learner markets with and without the clock over seeds; from the
per-step table come the deal timing within a period, the deal rate per
meeting, the efficiency of every period and the earnings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import expand, validate_grid

NAME = "clock"
TITLE = "The market clock: time steps instead of transactions"
#: the literature this section's answer sits in (with citations)
RELATED = (
    'Roth, Murnighan and Schoumaker (1988) found in bargaining experiments that agreements '
    'cluster just before the deadline (the deadline effect); Ma and Manove (1993) derive it '
    'from strategic delay. A learner that values waiting at what the rest of the period is '
    "worth has the same incentive to hold out until late, and the clock's later deals are "
    'that effect; whether it helps the market is a separate question, which the efficiency '
    'test answers.'
)
PERIOD = 10
#: bounded measures (intervals kept inside [0, 1])
BOUNDS = {m: (0.0, 1.0) for m in ("efficiency_first", "efficiency_last", "efficiency",
                                  "deal_rate_first_step", "deal_rate_last_step")}
#: the exploratory measures, as the tests table names them
WORDS = {"efficiency_first": "efficiency over the first periods, clock minus none",
         "efficiency": "efficiency over the run, clock minus none",
         "deal_rate_first_step": "deals per meeting at a period's first step, clock minus none",
         "deal_rate_last_step": "deals per meeting at a period's last step, clock minus none",
         "deals_per_period": "deals per period, clock minus none",
         "earnings_per_period": "earnings per trader per period, clock minus none"}
#: the tests that answer the document's question (Holm-corrected together): do deals close
#: earlier, and is the market better for it
CONFIRM = {"mean_deal_step": "mean step of a deal, clock minus none",
           "efficiency_last": "efficiency over the last periods, clock minus none"}


def _per_run(table: pd.DataFrame, steps: pd.DataFrame, window: int) -> pd.DataFrame:
    """One row per run: efficiency early and late, deal timing, earnings."""
    s = steps[steps["step"] > 0].copy()
    s["in_period"] = (s["step"] - s["period"] * PERIOD).astype(int)
    periods = int(s["period"].max()) + 1
    rows = []
    for run, g in s.groupby("run", sort=True):
        ends = g[g["in_period"] == PERIOD].sort_values("period")["efficiency"].to_numpy()
        late = g[g["period"] >= periods // 2]
        by_step = late.groupby("in_period")[["deals", "pairs"]].sum()
        info = table[table["run"] == run].iloc[0]
        rows.append({
            "run": run, "clock": bool(info["clock"]), "iteration": int(info["iteration"]),
            "efficiency_first": float(ends[:window].mean()),
            "efficiency_last": float(ends[-window:].mean()),
            "efficiency": float(info["efficiency"]),
            "mean_deal_step": float((by_step.index * by_step["deals"]).sum()
                                    / by_step["deals"].sum()),
            "deal_rate_first_step": float(by_step.loc[1, "deals"] / by_step.loc[1, "pairs"]),
            "deal_rate_last_step": float(by_step.loc[PERIOD, "deals"]
                                         / max(by_step.loc[PERIOD, "pairs"], 1)),
            "deals_per_period": float(info["deals"] / info["periods"]),
            "earnings_per_period": float((info["earnings.seller"] + info["earnings.buyer"]) / 2
                                         / info["periods"]),
            **{f"share_step_{k}": float(by_step.loc[k, "deals"] / by_step["deals"].sum())
               for k in by_step.index},
            **{f"rate_step_{k}": float(by_step.loc[k, "deals"] / max(by_step.loc[k, "pairs"], 1))
               for k in by_step.index},
        })
    return pd.DataFrame(rows)


def run(ctx: Context) -> Section:
    n = ctx.pick(100, 20)
    steps = ctx.pick(1000, 60)
    seeds = ctx.pick(20, 3)
    window = ctx.pick(10, 2)
    res = _markets(ctx, "report clock", n, seeds, steps, clock=[False, True])
    per = _per_run(res.table, res.steps, window)
    parts = _parts(ctx, n, seeds, steps, window)
    measures = ["efficiency_first", "efficiency_last", "efficiency", "mean_deal_step",
                "deal_rate_first_step", "deal_rate_last_step", "deals_per_period",
                "earnings_per_period"]
    rows, diffs = [], {}
    for clock in (False, True):
        g = per[per["clock"] == clock]
        row: dict[str, Any] = {"clock": clock, "seeds": len(g)}
        for m in measures:
            row.update(stats.mean(g[m].to_numpy(), BOUNDS.get(m)).row(m))
        rows.append(row)
    per = per.sort_values(["clock", "iteration"])
    for m in measures:
        diffs[m] = stats.difference(per.loc[per["clock"], m].to_numpy(),
                                    per.loc[~per["clock"], m].to_numpy(), paired=True)
    conf, family = stats.family(
        {CONFIRM[m]: diffs[m] for m in CONFIRM},
        {WORDS.get(m, m): d for m, d in diffs.items() if m not in CONFIRM}, digits=3)
    diffs.update({m: conf[CONFIRM[m]] for m in CONFIRM})
    summary = pd.DataFrame(rows)
    tests = pd.DataFrame([{"measure": m, **d.diff.row("clock_minus_none"), "p": d.p_welch,
                           "p_holm": d.p_holm} for m, d in diffs.items()])
    eff = _period_efficiency(res.table, res.steps)
    fig = _figure(per, eff)
    answer, why = _texts(summary, diffs, window, steps // PERIOD)
    apart, apart_tests, apart_text = _taken_apart(per, parts, window)
    why += " " + apart_text
    family += apart_tests
    words = {"efficiency_first": f"efficiency, first {window} periods",
             "efficiency_last": f"efficiency, last {window} periods",
             "mean_deal_step": f"mean step of a deal (1-{PERIOD})",
             "deal_rate_first_step": "deals per meeting, first step",
             "deal_rate_last_step": "deals per meeting, last step",
             "deals_per_period": "deals per period",
             "earnings_per_period": "earnings per trader per period"}
    show = pd.DataFrame({
        "measure": list(words.values()),
        "without the clock": [stats.Estimate(*summary.loc[0, [m, f"{m}_lo", f"{m}_hi"]],
                                             seeds).text(3) for m in words],
        "with the clock": [stats.Estimate(*summary.loc[1, [m, f"{m}_lo", f"{m}_hi"]],
                                          seeds).text(3) for m in words],
        "difference": [diffs[m].text(3) for m in words],
    })
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("The document proposed limiting the number of time steps instead of the "
                  "number of transactions, expecting that \"closing a transaction earlier is "
                  "a real improvement\". Does a clock make learners close earlier, and is the "
                  "market better for it?"),
        experiment=(f"A market of {n} Sellers and {n} Buyers, all Q-learners, values and costs "
                    f"uniform on 0-100, P = T = 5, trading periods of {PERIOD} steps (each "
                    f"trader trades at most one unit per period), {steps} steps "
                    f"({steps // PERIOD} periods), {seeds} seeds under common random numbers "
                    "(`batch --common-seeds`: each seed draws the same market in both arms, "
                    "compared by a paired t), with and without the market clock (`run.py "
                    "market --clock`: learners see the steps left in the period "
                    "and value a failed negotiation at what waiting is still worth, nothing at "
                    "the last step), through the batch runner with per-step data. Deal timing "
                    "is measured over the second half of the run. Confirmatory: the mean step "
                    "of a deal and the late efficiency, Holm-corrected."),
        answer=answer, why=why,
        figures={"clock.png": fig},
        tables={"clock.csv": summary, "clock_tests.csv": tests, "clock_periods.csv": eff,
                "clock_parts.csv": parts},
        display=[("Mean (95% interval) over seeds; difference = with minus without the clock",
                  show),
                 ("The clock taken apart: each part alone (`market --clock --clock-parts "
                  "state|wait`), mean (95% interval) over the same seeds", apart)],
        numbers={m: {"without": float(summary.loc[0, m]), "with": float(summary.loc[1, m])}
                 for m in measures},
        tests=family,
    )


#: the clock's arms: none, each part alone, both
ARMS = {"none": "without the clock", "state": "steps left in the state alone (failures worth 0)",
        "wait": "value of waiting alone (no steps left in the state)", "both": "the clock"}
#: what the taken-apart comparison looks at
APART = {"mean_deal_step": ("mean step of a deal", 2),
         "deal_rate_first_step": ("deals per meeting, first step", 3),
         "deals_per_period": ("deals per period", 1),
         "efficiency_last": ("late efficiency", 3)}


def _markets(ctx: Context, label: str, n: int, seeds: int, steps: int,
             **swept: list[Any]) -> Any:
    """Q-learner markets over ``swept`` values, with per-step data, under common random
    numbers: iteration i draws the same market in every arm (and in every call)."""
    grid = validate_grid({"n_buyers": [n], "n_sellers": [n], "period": [PERIOD], **swept,
                          "buyer_mix.qlearning": [1.0], "seller_mix.qlearning": [1.0]})
    return ctx.batch(label, expand(grid, seeds, ctx.seed_for(NAME), steps, common_seeds=True),
                     per_step=True)


def _parts(ctx: Context, n: int, seeds: int, steps: int, window: int) -> pd.DataFrame:
    """The same markets (common seeds with the main comparison) with one part of the clock
    at a time."""
    res = _markets(ctx, "report clock, taken apart", n, seeds, steps, clock=[True],
                   clock_parts=["state", "wait"])
    per = _per_run(res.table, res.steps, window)
    arm = res.table.set_index("run")["clock_parts"]
    return per.assign(arm=per["run"].map(arm).astype(str))


def _taken_apart(per: pd.DataFrame, parts: pd.DataFrame, window: int
                 ) -> tuple[pd.DataFrame, list[stats.Test], str]:
    """Each part of the clock against none and against both, seed by seed."""
    arms = {"none": per[~per["clock"]], "both": per[per["clock"]],
            "state": parts[parts["arm"] == "state"], "wait": parts[parts["arm"] == "wait"]}
    arms = {k: g.sort_values("iteration") for k, g in arms.items()}
    rows, diffs = [], {}
    for m, (words, digits) in APART.items():
        row = {"measure": words}
        for k in ("none", "state", "wait", "both"):
            row[ARMS[k]] = stats.mean(arms[k][m].to_numpy(), BOUNDS.get(m)).text(digits)
            if k in ("state", "wait"):
                diffs[(m, k)] = stats.difference(arms[k][m].to_numpy(), arms["none"][m].to_numpy(),
                                                 paired=True)
        rows.append(row)
    tests = [stats.Test(f"{APART[m][0]}, {k} alone minus none", d, False, APART[m][1])
             for (m, k), d in diffs.items()]
    step_s, step_w = diffs[("mean_deal_step", "state")], diffs[("mean_deal_step", "wait")]
    eff_s, eff_w = diffs[("efficiency_last", "state")], diffs[("efficiency_last", "wait")]
    text = (f"Taken apart, over the same seeds: the steps left in the state alone move the mean "
            f"step of a deal by {step_s.judged(2)} and the late efficiency by "
            f"{eff_s.judged(3)}; the value of waiting alone moves them by {step_w.judged(2)} "
            f"and {eff_w.judged(3)}.")
    later = {k: d.significant and d.diff.value > 0 for k, d in (("state", step_s),
                                                                ("wait", step_w))}
    if later["wait"] and not later["state"]:
        text += (" The delay comes from valuing a failure at what waiting is worth, not from "
                 "the larger state.")
    elif later["state"] and not later["wait"]:
        text += (" The delay comes from the larger state (the learners tell the steps apart), "
                 "not from the value of waiting.")
    elif later["state"] and later["wait"]:
        text += " Each part alone delays the deals."
    return pd.DataFrame(rows), tests, text


def _period_efficiency(table: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Efficiency of every period, mean and interval over seeds, per arm."""
    s = steps[(steps["step"] > 0) & (steps["step"] % PERIOD == 0)]
    s = s.merge(table[["run", "clock"]], on="run")
    rows = []
    for (clock, period), g in s.groupby(["clock", "period"], sort=True):
        rows.append({"clock": bool(clock), "period": int(period),
                     **stats.mean(g["efficiency"].to_numpy(), (0.0, 1.0)).row("efficiency")})
    return pd.DataFrame(rows)


def _texts(summary: pd.DataFrame, diffs: dict[str, stats.Difference], window: int,
           periods: int) -> tuple[str, str]:
    none, clock = summary.iloc[0], summary.iloc[1]
    step = diffs["mean_deal_step"]
    timing = (f"the mean step of a deal is {clock['mean_deal_step']:.2f} with the clock against "
              f"{none['mean_deal_step']:.2f} without, a difference of {step.judged(2)}")
    if not step.significant:
        s1 = f"The clock does not move deals detectably earlier or later: {timing}."
    elif step.diff.value < 0:
        s1 = f"With the clock deals come earlier in the period, as the document expected: {timing}."
    else:
        s1 = (f"With the clock deals come later in the period, not earlier: {timing}, the "
              "opposite of what the document expected.")
    e = diffs["efficiency_last"]
    s2 = (f"Efficiency over the last {window} of {periods} periods is "
          f"{clock['efficiency_last']:.3f} with the clock against {none['efficiency_last']:.3f} "
          f"without, a difference of {e.judged(3)}; with the clock it goes from "
          f"{clock['efficiency_first']:.3f} in the first {window} periods to "
          f"{clock['efficiency_last']:.3f}, without it from {none['efficiency_first']:.3f} to "
          f"{none['efficiency_last']:.3f}.")
    w = diffs["earnings_per_period"]
    verdict = ("the clock improves the market here" if e.significant and e.diff.value > 0 else
               "the clock makes the market less efficient here" if e.significant else
               "no improvement from the clock is shown here")
    s3 = f"Earnings per trader per period change by {w.judged(2)}; {verdict}."
    r1, rk = diffs["deal_rate_first_step"], diffs["deal_rate_last_step"]
    hold = r1.diff.value < 0 and r1.significant
    why = (f"A clocked learner values walking away at what trying again later in the period is "
           f"worth (nothing at its last step), so early in the period a refusal looks cheap: the "
           f"share of meetings that end "
           f"in a deal at the first step of a period is {clock['deal_rate_first_step']:.3f} with "
           f"the clock against {none['deal_rate_first_step']:.3f} without "
           f"({r1.text(3)}), at the last step {clock['deal_rate_last_step']:.3f} against "
           f"{none['deal_rate_last_step']:.3f} ({rk.text(3)}).")
    dp = diffs["deals_per_period"]
    fewer = dp.significant and dp.diff.value < 0
    why += (" The learners hold out early for a better price"
            + (f", and some hold out past the end of the period and lose their trade (deals "
               f"per period {clock['deals_per_period']:.1f} against "
               f"{none['deals_per_period']:.1f}, {dp.text(1)})" if fewer else "")
            + ": the clock makes delay costly only at the last step, and makes waiting look "
            "valuable until then." if hold else
            " So these runs do not show the learners holding out at the start of the period "
            "more than without the clock.")
    return " ".join([s1, s2, s3]), why


def _figure(per: pd.DataFrame, eff: pd.DataFrame) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    colours = {False: "tab:gray", True: "tab:purple"}
    labels = {False: "without the clock", True: "with the clock"}
    ax = axes[0]
    for clock in (False, True):
        e = eff[eff["clock"] == clock]
        ax.plot(e["period"], e["efficiency"], color=colours[clock], label=labels[clock])
        ax.fill_between(e["period"], e["efficiency_lo"], e["efficiency_hi"],
                        color=colours[clock], alpha=0.2)
    ax.set_xlabel("trading period")
    ax.set_ylabel("allocative efficiency of the period")
    ax.set_title("efficiency per period (mean, 95% interval over seeds)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    steps = np.arange(1, PERIOD + 1)
    for ax, prefix, title in ((axes[1], "share_step_", "share of a period's deals"),
                              (axes[2], "rate_step_", "deals per meeting")):
        width = 0.4
        for k, clock in enumerate((False, True)):
            g = per[per["clock"] == clock]
            est = [stats.mean(g[f"{prefix}{s}"].to_numpy(), (0.0, 1.0)) if f"{prefix}{s}" in g
                   else stats.Estimate(np.nan, np.nan, np.nan, 0) for s in steps]
            vals = np.array([e.value for e in est])
            err = np.array([e.value - e.lo if np.isfinite(e.lo) else 0 for e in est])
            ax.bar(steps + (k - 0.5) * width, vals, width, yerr=err, color=colours[clock],
                   label=labels[clock], capsize=2)
        ax.set_xticks(steps)
        ax.set_xlabel("step within the period")
        ax.set_title(f"{title}, second half of the run", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig
