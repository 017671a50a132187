"""Section: which strategies survive when traders copy what earns more?

Every other market section keeps its mix fixed. Here the built-in families
start at equal shares on both sides and traders revise their strategy at
each period's end (:mod:`market.sim.revision`): by pairwise proportional
imitation, a birth-death Moran process or the replicator dynamics, with and
without mutation. The runs go through the batch runner with per-step data
(each strategy's share per step); the tournament of the same families on
the two-agent game (:mod:`market.runs.tournament`) and its replicator rest
point (:mod:`market.runs.dynamics`) are the yardstick the market is compared
with.

How long is long enough: a run is *settled* when no family's share on
either side moved by more than 0.05 over its last quarter; the section
reports how many runs settled, so a reader sees whether the final shares are
an end point or a snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from market.report import stats
from market.report.section import Context, Section
from market.runs.batch import RunSpec, run_seed

NAME = "survival"
TITLE = "Which strategies survive when traders copy what earns more"
RELATED = (
    "Schlag (1998) showed that pairwise proportional imitation, copying a better earner "
    "with a probability proportional to the payoff gap, is the imitation rule that improves"
    " expected payoffs in every environment, and that its mean dynamics are the replicator "
    "dynamics; Nowak et al. (2004) gave the fixation probabilities of the birth-death Moran"
    " process in finite populations, and Traulsen, Shoresh and Nowak (2008) the exponential"
    " mapping of payoff to fitness used here for any selection intensity. Axelrod (1984) "
    "ran his tournament ecologically and found that exploiters which win against an even "
    "field (there, never cooperating) die out once their victims are gone; Omidshafiei et "
    "al. (2019) rank strategies by the mass alpha-Rank gives each monomorphic population. "
    "Gode and Sunder (1993) is the efficiency yardstick of the mixes section. None of these"
    " evolves a bargaining market in which learners keep learning while the population "
    "shifts: that is measured here."
)
FAMILIES = ("averaging", "zi-c", "linear", "hardliner", "tit-for-tat", "qlearning")
PROTOCOLS = ("imitate", "moran", "replicator")
MUTATIONS = (0.0, 0.01)
#: the neutral control: revisers copy a trader drawn at random whatever it earned (the Moran
#: process without selection), so what remains of a protocol's concentration beyond it is
#: selection's
NEUTRAL = "neutral"
#: the selection intensity of the Moran and replicator protocols (fitness exp(w * earnings /
#: price range)): period earnings are a fraction of the range, so w = 10 makes a gap of a
#: tenth of the range worth a factor e
SELECTION = 10.0
RATE = 0.1
PRICES, ROUNDS, PERIOD = 5, 5, 10
TAKEOVER = 0.9  # a family "takes over" a side when it holds at least this share
SETTLED = 0.05  # no share moved more than this over the run's last quarter


def specs(ctx: Context, n: int, periods: int, seeds: int) -> list[RunSpec]:
    """Every (protocol, mutation) arm ``seeds`` times; iteration ``i`` of every arm draws the
    same market (common random numbers)."""
    base = ctx.seed_for(NAME)
    share = 1.0 / len(FAMILIES)
    out, run = [], 0
    arms = [(pr, mu) for pr in PROTOCOLS for mu in MUTATIONS] + [(NEUTRAL, 0.0)]
    for p, (protocol, mutation) in enumerate(arms):
        params = (("n_buyers", n), ("n_sellers", n), ("prices", PRICES), ("rounds", ROUNDS),
                  ("period", PERIOD), ("revision", "moran" if protocol == NEUTRAL else protocol),
                  ("revision_rate", RATE), ("selection", 0.0 if protocol == NEUTRAL
                                            else SELECTION), ("mutation", mutation),
                  *((f"buyer_mix.{f}", share) for f in FAMILIES),
                  *((f"seller_mix.{f}", share) for f in FAMILIES))
        for i in range(seeds):
            out.append(RunSpec(run, p, i, run_seed(base, i), periods * PERIOD, params))
            run += 1
    return out


def _arm_name(spec: RunSpec) -> str:
    p = dict(spec.params)
    return NEUTRAL if p["selection"] == 0 else str(p["revision"])


def shares_at_period_ends(steps: pd.DataFrame) -> pd.DataFrame:
    """Per run and period, each side's share of each family at the period's last step
    (columns ``seller.NAME``, ``buyer.NAME``) and the period's efficiency."""
    s = steps[steps["step"] > 0]
    last = s.groupby(["run", "period"])["step"].transform("max") == s["step"]
    ends = s[last]
    cols = {c: c.removeprefix("share.") for c in ends.columns if c.startswith("share.")}
    switches = [c for c in ends.columns if c.startswith("switches.")]
    return ends[["run", "period", "efficiency", "mean_price", *cols, *switches]].rename(
        columns=cols)


def _experiment(ctx: Context, n: int, periods: int, seeds: int
                ) -> tuple[pd.DataFrame, pd.DataFrame, dict[int, tuple[str, float, int]]]:
    """Every arm's runs at ``ctx``'s master seed: period ends, one row per run, the arms."""
    todo = specs(ctx, n, periods, seeds)
    res = ctx.batch(f"report survival (seed {ctx.seed})", todo, per_step=True)
    ends = shares_at_period_ends(res.steps)
    arm = {s.run: (_arm_name(s), dict(s.params)["mutation"], s.iteration) for s in todo}
    return ends, _per_run(ends, arm, periods, n), arm


def run(ctx: Context) -> Section:
    n = ctx.pick(60, 12)
    periods = ctx.pick(200, 12)
    seeds = ctx.pick(20, 3)
    masters = ctx.masters()
    done = [_experiment(c, n, periods, seeds) for c in masters]
    ends, runs, arm = done[0]  # the report's own master seed: tables, figure and tests
    rests = [_tournament(c) for c in masters]
    rest = rests[0]
    summary = _summary(runs, seeds)
    conf, tests = _tests(runs)
    robust = _robustness([d[1] for d in done], rests, [c.seed for c in masters])
    answer = _answer(summary, runs, conf, robust)
    show = _display(summary, seeds)
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("When traders can copy the strategy of those who earn more, what does a "
                  "market that starts with equal shares of every built-in family become: does "
                  "one family take over, or does the market settle in a mix? How do "
                  "efficiency and prices move as the population evolves, what does mutation "
                  "change, and does the market end where the tournament's replicator "
                  "dynamics do?"),
        experiment=(f"Markets of {n} Sellers and {n} Buyers (values and costs uniform on "
                    f"0-100, P = {PRICES}, T = {ROUNDS}, periods of {PERIOD} steps, "
                    f"{periods} periods), each side starting with equal shares of "
                    f"{', '.join(FAMILIES)} (the learners learning online throughout). At "
                    f"each period's end a trader revises with probability {RATE} by "
                    f"{', '.join(PROTOCOLS)} (selection intensity {SELECTION:g} for the last "
                    f"two), with mutation {' and '.join(f'{m:g}' for m in MUTATIONS)}; an "
                    f"adopted learner starts fresh. {seeds} seeds per arm, iteration i of "
                    "every arm drawing the same market. A run counts as settled when no "
                    f"family's share on either side moved by more than {SETTLED} over its "
                    "last quarter. Beside them, the tournament of the same families on the "
                    "two-agent game (100 negotiations per pairing and first mover) and the "
                    "replicator dynamics on its mean payoffs from equal shares. A neutral "
                    "control arm revises the same way with no selection (the Moran process at "
                    "w = 0: a reviser copies a trader drawn at random), since drift alone "
                    "also concentrates a finite population. Confirmatory, Holm-corrected "
                    "together, paired by seed: for each protocol without mutation, the "
                    "effective number of families at the end (1 / sum of squared shares, "
                    "mean over sides; 6 at the start) minus neutral drift's (does selection "
                    "concentrate the market beyond drift?), and for each protocol the same "
                    "number with mutation minus without (does mutation keep the market "
                    "mixed?). Beside each arm, its switching volume (strategy changes per "
                    "trader and period): the protocols differ in how often traders switch as "
                    "much as in how they choose, so a difference from drift is not the rule's "
                    "alone. Every headline is checked at three master seeds "
                    f"({', '.join(str(c.seed) for c in masters)}: the whole experiment and "
                    "the tournament again) and stated as holding at all three or as its "
                    "count."),
        answer=answer,
        figures={"survival.png": _figure(ends, arm)},
        tables={"survival.csv": summary, "survival_runs.csv": runs,
                "survival_tournament.csv": pd.DataFrame(
                    {f"replicator_rest_seed_{c.seed}": r for c, r in zip(masters, rests,
                                                                          strict=True)}),
                "survival_seeds.csv": robust.table},
        tests=tests,
        display=[("Final shares (mean over seeds and both sides, 95% interval), runs in which "
                  "one family took over a side, runs settled, switching volume, and "
                  "efficiency early and late",
                  show)],
        numbers={"dominant": {f"{r.protocol} {r.mutation:g}": r.dominant
                              for r in summary.itertuples()},
                 "tournament_rest": {str(k): float(v) for k, v in rest.items()},
                 "tournament_winners": robust.winners},
    )


def _per_run(ends: pd.DataFrame, arm: dict[int, tuple[str, float, int]],
             periods: int, n: int) -> pd.DataFrame:
    """One row per run: final shares (mean over sides), takeover, settled, diversity,
    switching volume (strategy changes per trader and period), efficiency over the first
    and last tenth of the periods."""
    rows = []
    tenth = max(periods // 10, 1)
    quarter = max(periods // 4, 1)
    for run, g in ends.groupby("run"):
        g = g.sort_values("period")
        protocol, mutation, iteration = arm[int(run)]
        final = g.iloc[-1]
        row: dict[str, Any] = {"run": int(run), "protocol": protocol, "mutation": mutation,
                               "iteration": iteration}
        settled, takeover, diversity = True, False, []
        for side in ("seller", "buyer"):
            x = np.array([final[f"{side}.{f}"] for f in FAMILIES])
            diversity.append(1.0 / float((x**2).sum()))
            takeover |= bool(x.max() >= TAKEOVER)
            late = g.iloc[-quarter:][[f"{side}.{f}" for f in FAMILIES]].to_numpy()
            settled &= bool(np.ptp(late, axis=0).max() <= SETTLED)
        for f in FAMILIES:
            row[f] = (final[f"seller.{f}"] + final[f"buyer.{f}"]) / 2
        switches = final["switches.seller"] + final["switches.buyer"]
        row.update(takeover=takeover, settled=settled, diversity=float(np.mean(diversity)),
                   switching=float(switches) / (2 * n * periods),
                   efficiency_early=float(g["efficiency"].iloc[:tenth].mean()),
                   efficiency_late=float(g["efficiency"].iloc[-tenth:].mean()),
                   price_early=_mean_price(g["mean_price"].iloc[:tenth]),
                   price_late=_mean_price(g["mean_price"].iloc[-tenth:]))
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_price(prices: pd.Series) -> float:
    """The mean of the periods' mean prices, NaN (without a warning) when no period of them
    had a deal."""
    dealt = prices.dropna()
    return float(dealt.mean()) if len(dealt) else float("nan")


def _summary(runs: pd.DataFrame, seeds: int) -> pd.DataFrame:
    rows = []
    for (protocol, mutation), g in runs.groupby(["protocol", "mutation"], sort=False):
        means = {f: g[f].mean() for f in FAMILIES}
        row: dict[str, Any] = {"protocol": protocol, "mutation": mutation, "seeds": len(g),
                               "dominant": max(means, key=means.get)}
        for f in FAMILIES:
            row.update(stats.mean(g[f].to_numpy(), (0.0, 1.0)).row(f))
        row.update(stats.share(int(g["takeover"].sum()), len(g)).row("takeover"))
        row.update(stats.share(int(g["settled"].sum()), len(g)).row("settled"))
        row.update(stats.mean(g["diversity"].to_numpy(), (1.0, len(FAMILIES))).row("diversity"))
        row.update(stats.mean(g["switching"].to_numpy(), (0.0, 1.0)).row("switching"))
        row.update(stats.mean(g["efficiency_early"].to_numpy(), (-np.inf, 1.0)).row(
            "efficiency_early"))
        row.update(stats.mean(g["efficiency_late"].to_numpy(), (-np.inf, 1.0)).row(
            "efficiency_late"))
        rows.append(row)
    return pd.DataFrame(rows)


def _tests(runs: pd.DataFrame) -> tuple[dict[str, stats.Difference], list[stats.Test]]:
    conf, labels = {}, {}
    neutral = runs[runs["protocol"] == NEUTRAL].sort_values("iteration")["diversity"]
    for protocol in PROTOCOLS:
        g = runs[(runs["protocol"] == protocol) & (runs["mutation"] == 0)].sort_values(
            "iteration")
        key = f"select {protocol}"
        labels[key] = (f"{protocol}, no mutation: effective number of families at the end "
                       "minus neutral drift's")
        conf[key] = stats.difference(g["diversity"].to_numpy(), neutral.to_numpy(),
                                     paired=True)
    for protocol in PROTOCOLS:
        g = runs[runs["protocol"] == protocol]
        with_mu = g[g["mutation"] > 0].sort_values("iteration")["diversity"].to_numpy()
        without = g[g["mutation"] == 0].sort_values("iteration")["diversity"].to_numpy()
        key = f"mutate {protocol}"
        labels[key] = (f"{protocol}: effective number of families at the end, mutation "
                       f"{MUTATIONS[1]:g} minus none")
        conf[key] = stats.difference(with_mu, without, paired=True)
    explore = {}
    for protocol in PROTOCOLS:
        g = runs[(runs["protocol"] == protocol) & (runs["mutation"] == 0)]
        explore[f"{protocol}, no mutation: efficiency over the last tenth minus the first"] = (
            stats.difference(g["efficiency_late"].to_numpy(), g["efficiency_early"].to_numpy(),
                             paired=True))
        late, early = g["price_late"].to_numpy(), g["price_early"].to_numpy()
        ok = np.isfinite(late) & np.isfinite(early)  # a tenth without a deal has no price
        if ok.sum() >= 2:
            explore[f"{protocol}, no mutation: mean price over the last tenth minus the "
                    "first"] = stats.difference(late[ok], early[ok], paired=True)
    adjusted, tests = stats.family({labels[k]: d for k, d in conf.items()}, explore, digits=3)
    return {k: adjusted[labels[k]] for k in conf}, tests


def _tournament(ctx: Context) -> pd.Series:
    """The replicator dynamics' rest point on the tournament of the same families."""
    from market.game.rules import Protocol
    from market.runs.dynamics import replicator
    from market.runs.tournament import registry_entrants, run_tournament

    protocol = Protocol(PRICES, ROUNDS)
    entrants = registry_entrants(protocol, list(FAMILIES), train_seed=ctx.seed_for(NAME, 1))
    result = run_tournament(entrants, protocol, ctx.pick(100, 20), ctx.seed_for(NAME, 2),
                            (1, PRICES), (1, PRICES))
    A = result.mean_payoff.loc[list(FAMILIES), list(FAMILIES)]
    traj = replicator(A.to_numpy(float), list(FAMILIES))
    return traj.rest


@dataclass
class Robustness:
    """The section's headlines at each master seed: per protocol (no mutation) the effective
    number of families against drift's, the switching volume, the largest family; and the
    tournament's replicator winner."""

    table: pd.DataFrame
    winners: list[str]
    seeds: list[int]

    def of(self, protocol: str) -> pd.DataFrame:
        return self.table[self.table["protocol"] == protocol]


def _robustness(all_runs: list[pd.DataFrame], rests: list[pd.Series],
                seeds: list[int]) -> Robustness:
    rows = []
    for seed, runs in zip(seeds, all_runs, strict=True):
        base = runs[runs["mutation"] == 0]
        drift = base[base["protocol"] == NEUTRAL].sort_values("iteration")
        for protocol in (*PROTOCOLS, NEUTRAL):
            g = base[base["protocol"] == protocol].sort_values("iteration")
            d = stats.difference(g["diversity"].to_numpy(), drift["diversity"].to_numpy(),
                                 paired=True)
            largest = g[list(FAMILIES)].idxmax(axis=1).value_counts()
            rows.append({"master_seed": seed, "protocol": protocol, "runs": len(g),
                         "diversity": float(g["diversity"].mean()),
                         "drift_diversity": float(drift["diversity"].mean()),
                         "minus_drift": d.diff.value, "p_paired": d.p_welch,
                         "switching": float(g["switching"].mean()),
                         "dominant": str(g[list(FAMILIES)].mean().idxmax()),
                         "qlearning_largest_runs": int(largest.get("qlearning", 0))})
    return Robustness(pd.DataFrame(rows), [str(r.idxmax()) for r in rests], seeds)


def _answer(summary: pd.DataFrame, runs: pd.DataFrame, conf: dict[str, stats.Difference],
            robust: Robustness) -> str:
    no_mu = summary[summary["mutation"] == 0].set_index("protocol")
    drift = no_mu.loc[NEUTRAL, "diversity"]
    k = len(robust.seeds)
    parts = []
    for protocol in PROTOCOLS:
        r = no_mu.loc[protocol]
        d = conf[f"select {protocol}"]
        top = r["dominant"]
        at = robust.of(protocol)
        same = int(((np.sign(at["minus_drift"]) == np.sign(d.diff.value))
                    & (at["p_paired"] < stats.FINDING)).sum())
        tops = at["dominant"].value_counts()
        parts.append(
            f"Under {protocol} (no mutation) {top} ends with the largest share, "
            f"{r[top]:.2f} ({r[top + '_lo']:.2f} to {r[top + '_hi']:.2f}) of each side on "
            f"average (1/{len(FAMILIES)} at the start; the largest mean share at the {k} "
            f"master seeds: {_counts(tops, k)}); the effective number of families ends at "
            f"{r['diversity']:.2f} (6 at the start), against {drift:.2f} under neutral drift "
            f"({d.judged(2)}; "
            + ("the same direction, significant, at every master seed: "
               if same == k else f"the same direction and significant at {same} of {k} "
                                  "master seeds: ")
            + ", ".join(f"{x:.2f} against {y:.2f}" for x, y in
                        zip(at["diversity"], at["drift_diversity"], strict=True))
            + f"); one family took over a side in {r['takeover']:.0%} of the runs and "
            f"{r['settled']:.0%} settled; the largest family of a run was "
            f"{_winners(runs, protocol)}.")
    vol = robust.table.groupby("protocol", sort=False)["switching"]
    lo, hi = vol.min(), vol.max()
    parts.append(
        "Switching volume (strategy changes per trader and period, range over the master "
        "seeds): " + "; ".join(f"{p} {lo[p]:.3f}-{hi[p]:.3f}" for p in (*PROTOCOLS, NEUTRAL))
        + ". The protocols switch at very different rates, and the neutral control switches "
        "at its own: how far a protocol's diversity lies from drift's measures its switching "
        "volume and its selection together, not its choice rule alone.")
    mu = [f"{p} {conf[f'mutate {p}'].judged(2)}" for p in PROTOCOLS]
    parts.append("Mutation at 0.01 changes the effective number of families at the end by: "
                 + "; ".join(mu) + ".")
    eff = "; ".join(f"{p} {no_mu.loc[p, 'efficiency_early']:.3f} to "
                    f"{no_mu.loc[p, 'efficiency_late']:.3f}" for p in PROTOCOLS)
    parts.append(f"Allocative efficiency, first tenth of the periods to the last: {eff} "
                 "(exploratory tests below).")
    q = robust.table[robust.table["protocol"].isin(PROTOCOLS)]
    parts.append("In the market the learners start from empty tables (an adopted learner "
                 "starts fresh) and pay for exploring while the population shifts around "
                 "them, whereas the tournament's learner plays tables trained by self-play "
                 "beforehand: Q-learning is the largest family in "
                 f"{int(q['qlearning_largest_runs'].sum())} of {int(q['runs'].sum())} runs "
                 f"without mutation over the {k} master seeds.")
    winners = pd.Series(robust.winners).value_counts()
    agree = [p for p in PROTOCOLS
             if (robust.of(p)["dominant"].to_numpy() == np.array(robust.winners)).all()]
    parts.append(f"The tournament's replicator dynamics end at {_counts(winners, k)} "
                 f"tournament seeds; the market's largest family agrees with it at every "
                 f"master seed under " + (", ".join(agree) if agree else "no protocol")
                 + ": in the market a trader earns against partners drawn from the other "
                   "side's current mix and within its own value or cost, which the "
                   "two-agent tournament leaves out.")
    return " ".join(parts)


def _counts(counts: pd.Series, k: int) -> str:
    """``linear in 2 of 3, zi-c in 1 of 3``."""
    return ", ".join(f"{name} in {int(c)} of {k}" for name, c in counts.items())


def _winners(runs: pd.DataFrame, protocol: str) -> str:
    """Which family was largest at the end of each run of ``protocol`` (no mutation), as
    shares of the runs."""
    g = runs[(runs["protocol"] == protocol) & (runs["mutation"] == 0)]
    top = g[list(FAMILIES)].idxmax(axis=1).value_counts(normalize=True)
    return ", ".join(f"{f} in {v:.0%}" for f, v in top.items())


def _display(summary: pd.DataFrame, seeds: int) -> pd.DataFrame:
    rows = []
    for _, r in summary.iterrows():
        rows.append({
            "protocol": r["protocol"], "mutation": f"{r['mutation']:g}",
            **{f: stats.Estimate(r[f], r[f"{f}_lo"], r[f"{f}_hi"], seeds).text(2)
               for f in FAMILIES},
            "takeover": f"{r['takeover']:.0%}", "settled": f"{r['settled']:.0%}",
            "switches per trader and period": f"{r['switching']:.3f}",
            "efficiency first / last tenth": f"{r['efficiency_early']:.3f} / "
                                             f"{r['efficiency_late']:.3f}",
        })
    return pd.DataFrame(rows)


def _figure(ends: pd.DataFrame, arm: dict[int, tuple[str, float, int]]) -> Any:
    """Mean share of each family (both sides) over the periods, per protocol, without and
    with mutation: the market's ecosystem figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = ends.copy()
    frame["protocol"] = [arm[int(r)][0] for r in frame["run"]]
    frame["mutation"] = [arm[int(r)][1] for r in frame["run"]]
    for f in FAMILIES:
        frame[f] = (frame[f"seller.{f}"] + frame[f"buyer.{f}"]) / 2
    fig, axes = plt.subplots(len(MUTATIONS), len(PROTOCOLS), figsize=(15, 7), sharex=True,
                             sharey=True, squeeze=False)
    for i, mu in enumerate(MUTATIONS):
        for j, protocol in enumerate(PROTOCOLS):
            ax = axes[i][j]
            g = frame[(frame["protocol"] == protocol) & (frame["mutation"] == mu)]
            mean = g.groupby("period")[list(FAMILIES)].mean()
            ax.stackplot(mean.index.to_numpy(), mean.to_numpy().T, labels=FAMILIES, alpha=0.85)
            ax.set_ylim(0, 1)
            ax.set_title(f"{protocol}, mutation {mu:g}", fontsize=9)
            if i == len(MUTATIONS) - 1:
                ax.set_xlabel("period")
            if j == 0:
                ax.set_ylabel("mean share (both sides)")
    handles, labels = axes[0][0].get_legend_handles_labels()  # one legend, under the title,
    fig.legend(handles, labels, loc="upper center", ncol=len(FAMILIES), fontsize=8,  # on no
               bbox_to_anchor=(0.5, 0.955), frameon=False)  # panel's data
    fig.suptitle("Which strategies survive: mean shares over seeds, per protocol", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig
