"""Section 2: larger games (more price levels P, rounds T): richer strategies, or no convergence?

The document proposed enlarging ``price_space_size`` and ``time_space_size``
and expected "more complex strategy or impossibility to converge toward a
stable Q-Table". For P in {3, 5, 10, 20} and T in {2, 3, 5, 10}, both
presets of :mod:`market.game.training` are trained over many seeds and
measured by the exact evaluator (NashConv, the share of seeds at an
equilibrium), the greedy test (the Seller's reward and the deal rate) and
the training time. Where the default preset's budget (150,000 episodes) no
longer brings self-play to an equilibrium, the budget is multiplied (the
schedules stretch with it) until it does, or up to a cap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import strategies
from market.compiled_game import negotiate
from market.game import evaluation, qtable
from market.game.protocol import Side
from market.game.rules import BUYER, SELLER, Protocol
from market.game.training import PRESETS, TrainResult, preset, train
from market.report import stats
from market.report.section import Context, Section

NAME = "sizes"
TITLE = "Larger games: more price levels and rounds"
#: the literature this section's answer sits in (with citations)
RELATED = (
    'With no discount and a finite horizon the alternating-offers game gives the proposer '
    'of the last round the whole surplus, up to one price step (Ståhl 1972; the '
    'finite-horizon game of Rubinstein 1982 without discounting). Here the first mover also '
    'makes the last offer in T rounds, so every converged game ends at ((P - 1)/P, 1/P), '
    'whatever T. Tabular Q-learning converges only if every state-action pair is tried '
    'infinitely often (Watkins and Dayan 1992); the budgets found here say how many '
    'episodes "infinitely often" means for each game under this schedule.'
)
PRESET_NAMES = ("seed", "default")
#: a game "converges" within a budget when at least this share of seeds ends at NashConv 0
CONVERGED = 0.5
AT_ZERO = 1e-9


def _measure(ctx: Context, name: str, P: int, T: int, seeds: int, mult: int = 1,
             key: int = 0) -> dict[str, Any]:
    """Train ``seeds`` seeds of preset ``name`` at P, T (budget ``mult`` x) and measure them."""
    over: dict[str, Any] = {"prices": P, "rounds": T, "seeds": seeds,
                            "seed": ctx.seed_for(NAME, PRESET_NAMES.index(name), P, T, key)}
    if mult != 1:
        over["cycles"] = PRESETS[name].cycles * mult
    res = train(preset(name, **over), nash_conv=False, exact=False)
    nc = np.asarray(evaluation.nash_conv(res.seller, res.buyer, res.protocol), dtype=float)
    episodes = res.config.test_episodes
    deals = res.test["deals"].to_numpy(float) / episodes
    out = evaluation.outcomes(res.seller, res.buyer, res.protocol)  # (n, first, [s, b, deal])
    first_reward = (out[:, SELLER, SELLER] + out[:, BUYER, BUYER]) / 2
    at_zero = int((nc < AT_ZERO).sum())
    moves = _moves(res, np.random.default_rng(over["seed"]))
    return {
        "preset": name, "P": P, "T": T, "budget_multiple": mult,
        "episodes_per_seed": res.config.total_episodes, "seeds": seeds,
        **stats.mean(nc, (0.0, np.inf)).row("nash_conv"), "at_zero": at_zero,
        **stats.share(at_zero, seeds).row("share_at_zero"),
        **stats.mean(first_reward, (0.0, 1.0)).row("first_mover_reward"),
        "first_mover_reward_at_zero": (float(first_reward[nc < AT_ZERO].mean()) if at_zero
                                       else float("nan")),
        **stats.mean(deals, (0.0, 1.0)).row("deal_rate"), **stats.mean(moves).row("moves"),
        **stats.mean(_untouched(res), (0.0, 1.0)).row("untouched_cells"),
        TIMING: res.train_seconds / seeds,
    }


#: the one timing of this section's rows: kept out of its tables and figure (timings.csv)
TIMING = "train_seconds_per_seed"


def _moves(res: TrainResult, rng: np.random.Generator) -> np.ndarray:
    """Moves per negotiation when each seed's trained pair plays greedily, averaged over
    both first movers: how long the learned bargaining is (2: the opening offer accepted)."""
    protocol, n = res.protocol, res.config.seeds
    players = [strategies.make("qlearning", side, n, protocol, tables=tables, learning=False)
               for side, tables in ((SELLER, res.seller), (BUYER, res.buyer))]
    sides = [Side([p], np.zeros(n, dtype=np.intp), np.arange(n), np.ones(n, dtype=np.int64),
                  np.full(n, protocol.prices, dtype=np.int64)) for p in players]
    played = [negotiate(protocol, sides[0], sides[1], first, rng).n_moves for first in
              (SELLER, BUYER)]
    return (played[0] + played[1]) / 2


def usable_rows(protocol: Protocol, roles: int) -> np.ndarray:
    """(roles, S) rows a learner can ever be in: role 0 (moved first) never sees the last
    round's rows, role 1 (moved second) never the start row; a role-blind table sees all."""
    S, T = qtable.n_rows(protocol), protocol.rounds
    rows = np.zeros((roles, S), dtype=bool)
    rows[:, : S - 1] = True  # every row but the terminal one
    if roles == 2:
        rows[0, qtable.round_rows(protocol, T - 1)] = False
        rows[1, 0] = False
    return rows


def _untouched(res: TrainResult) -> np.ndarray:
    """Per seed: the share of the cells the learners can use that training never updated."""
    protocol, init = res.protocol, res.config.init
    both = np.stack([res.seller, res.buyer], axis=1)  # (n, 2 sides, R, S, A)
    usable = usable_rows(protocol, both.shape[2])[:, :, None] & qtable.legal_rows(protocol)
    still = qtable.untrained(both, protocol, init) & usable
    return still.sum(axis=(1, 2, 3, 4)) / (2 * usable.sum())


def run(ctx: Context) -> Section:
    prices = ctx.pick((3, 5, 10, 20), (3, 5))
    rounds = ctx.pick((2, 3, 5, 10), (3, 10))
    seeds = ctx.pick(32, 4)
    ladder = ctx.pick((4, 16, 64), (4,))
    ladder_seeds = ctx.pick(4, 2)
    grid = [(name, P, T) for name in PRESET_NAMES for P in prices for T in rounds]
    rows = []
    with ctx.progress("report sizes", len(grid), "games trained") as update:
        for name, P, T in grid:
            update(description=f"{name} P={P} T={T}")
            rows.append(_measure(ctx, name, P, T, seeds))
            update(advance=1)
    table = pd.DataFrame(rows)
    default = table[table["preset"] == "default"]
    failing = default[default["share_at_zero"] < CONVERGED][["P", "T"]].itertuples(index=False)
    failing = [(int(p), int(t)) for p, t in failing]
    budget_rows = []
    with ctx.progress("report sizes budget", len(failing) * len(ladder),
                      "larger budgets tried") as update:
        for P, T in failing:
            for k, mult in enumerate(ladder):
                update(description=f"P={P} T={T} x{mult}")
                r = _measure(ctx, "default", P, T, ladder_seeds, mult, key=1 + k)
                budget_rows.append(r)
                update(advance=1)
                if r["share_at_zero"] >= CONVERGED:
                    break
    budget = pd.DataFrame(budget_rows, columns=table.columns)
    needs = _needs(failing, budget, ladder)
    fig = _figure(table, budget, prices, rounds)
    answer, why = _texts(table, budget, needs, seeds, ladder, ladder_seeds)
    show = default[["P", "T"]].copy()
    for name in PRESET_NAMES:
        t = table[table["preset"] == name].reset_index(drop=True)
        show[f"NashConv, {name}"] = [f"{v:.3f}" for v in t["nash_conv"]]
    t = default.reset_index(drop=True)
    show = show.reset_index(drop=True)
    show["at 0, default"] = [f"{a}/{seeds}" for a in t["at_zero"]]
    show["first mover's reward, default"] = [f"{v:.3f}" for v in t["first_mover_reward"]]
    show["moves, default"] = [f"{v:.2f}" for v in t["moves"]]
    show["default budget converges?"] = [needs.get((p, q), "yes")
                                         for p, q in zip(t["P"], t["T"], strict=True)]
    return Section(
        name=NAME, title=TITLE, related=RELATED,
        question=("The document proposed enlarging the price and time spaces and expected "
                  "\"more complex strategy or impossibility to converge toward a stable "
                  "Q-Table\". Which is it, and what does self-play need where it stops "
                  "converging?"),
        experiment=(f"Both presets trained at every P in {{{', '.join(map(str, prices))}}} and "
                    f"T in {{{', '.join(map(str, rounds))}}}, {seeds} seeds each: the "
                    "document's (`--preset seed`, 5,000 episodes) and the default self-play "
                    "(`--preset default`, 150,000 episodes). Measured: NashConv of the final "
                    "tables and the share of seeds at 0, the first mover's expected reward "
                    "(exact evaluator, averaged over both first movers), the deal rate of the "
                    "greedy test, the moves per negotiation when the trained pair plays (2: the "
                    "opening offer accepted at once), the share of usable Q-table cells training "
                    "never updated, and the training time per seed (seeds trained together on "
                    "all cores). "
                    f"Where fewer than {CONVERGED:.0%} of the default preset's seeds reach "
                    f"NashConv 0, the budget is multiplied by {', '.join(map(str, ladder))} in "
                    f"turn ({ladder_seeds} seeds each, the schedules stretched with it) until "
                    "they do."),
        answer=answer, why=why,
        figures={"sizes.png": fig},
        tables={"sizes.csv": table.drop(columns=[TIMING]),
                "sizes_budget.csv": budget.drop(columns=[TIMING])},
        display=[("NashConv (mean over seeds) by preset; the default preset's seeds at 0, "
                  "the first mover's reward, moves per negotiation, and the budget it needs",
                  show)],
        timings={f"training per seed, preset {r['preset']}, P={r['P']}, T={r['T']}"
                 + (f", x{r['episodes_per_seed'] // PRESETS['default'].total_episodes}"
                    if k >= len(table) else ""): float(r[TIMING])
                 for k, (_, r) in enumerate(pd.concat([table, budget]).iterrows())},
        numbers={"converges_at_default_budget": [list(k) for k in
                                                 default[default["share_at_zero"] >= CONVERGED]
                                                 [["P", "T"]].itertuples(index=False)],
                 "needs": {f"P={p},T={t}": v for (p, t), v in needs.items()}},
    )


def _needs(failing: list[tuple[int, int]], budget: pd.DataFrame,
           ladder: tuple[int, ...]) -> dict[tuple[int, int], str]:
    """For each game the default budget fails: the budget that converged, or the cap passed."""
    base = PRESETS["default"].total_episodes
    out = {}
    for P, T in failing:
        b = budget[(budget["P"] == P) & (budget["T"] == T)]
        ok = b[b["share_at_zero"] >= CONVERGED]
        if len(ok):
            m = int(ok["budget_multiple"].iloc[0])
            out[(P, T)] = f"no; {m}x ({m * base / 1e6:.1f}M episodes)"
        else:
            out[(P, T)] = f"no; not within {ladder[-1]}x ({ladder[-1] * base / 1e6:.1f}M)"
    return out


def _texts(table: pd.DataFrame, budget: pd.DataFrame, needs: dict[tuple[int, int], str],
           seeds: int, ladder: tuple[int, ...], ladder_seeds: int) -> tuple[str, str]:
    seed_t = table[table["preset"] == "seed"]
    default = table[table["preset"] == "default"]
    conv = default[default["share_at_zero"] >= CONVERGED]
    small = seed_t.loc[seed_t["nash_conv"].idxmin()]
    large = seed_t.loc[seed_t["nash_conv"].idxmax()]
    never = int((seed_t["share_at_zero"] >= CONVERGED).sum())
    verdict = ("does not converge at any size we tried" if never == 0 else
               f"converges on {never} of {len(seed_t)} games")
    s1 = (f"The document's schedule {verdict} (at least half its seeds at NashConv 0), and its "
          f"NashConv ranges from {small['nash_conv']:.2f} (P={small['P']}, T={small['T']}) to "
          f"{large['nash_conv']:.2f} (P={large['P']}, T={large['T']}).")
    games = ", ".join(f"({p}, {t})" for p, t in conv[["P", "T"]].itertuples(index=False))
    fails = len(needs)
    reached = {k: v for k, v in needs.items() if "not within" not in v}
    s2 = (f"Self-play with the default budget reaches an equilibrium on {len(conv)} of "
          f"{len(default)} games ((P, T) = {games or 'none'})")
    if fails:
        s2 += (f"; of the other {fails}, {len(reached)} "
               f"{'converges' if len(reached) == 1 else 'converge'} with a larger budget")
    if reached:
        s2 += " (" + "; ".join(f"P={p}, T={t}: {v.split('; ')[1]}" for (p, t), v in
                               reached.items()) + ")"
    missing = [k for k in needs if k not in reached]
    if missing:
        s2 += ("; " + ", ".join(f"({p}, {t})" for p, t in missing)
               + f" did not within {ladder[-1]}x")
    s2 += "."
    if len(conv):
        expected = (conv["P"] - 1) / conv["P"]
        got = conv["first_mover_reward_at_zero"]
        same = bool(((got - expected).abs() < 1e-6).all())
        lo, hi = conv["deal_rate"].min(), conv["deal_rate"].max()
        rate = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f} to {hi:.2f}"
        s3 = (f"Where it converges, the deal rate is {rate} and at equilibrium the first "
              f"mover gets "
              f"{got.min():.2f} to {got.max():.2f} of the range")
        if same:
            s3 += (", exactly (P - 1)/P in every game: the outcome the learners select at "
                   "P = T = 5 (section 3), so larger games bring no richer strategy, only a "
                   "larger budget")
        s3 += (f"; the pair haggles for {conv['moves'].min():.1f} to {conv['moves'].max():.1f} "
               "moves on average before that deal (2: the opening offer accepted), since with "
               "no discount a counter-offer that ends in the same deal costs nothing.")
    else:
        s3 = "No game converged within the default budget in this run."
    cells = (2 + default["P"] * default["T"]) * (default["P"] + 2)
    bad = default[default["share_at_zero"] < CONVERGED]["untouched_cells"]
    good = conv["untouched_cells"]
    why = (f"The same 150,000 episodes must fill tables from {cells.min():,} cells per role (P="
           f"{default.loc[cells.idxmin(), 'P']}, T={default.loc[cells.idxmin(), 'T']}) to "
           f"{cells.max():,} (P={default.loc[cells.idxmax(), 'P']}, "
           f"T={default.loc[cells.idxmax(), 'T']}), and carry values back through up to 2T "
           f"moves; a best response steers the game into any row the other side left wrong. ")
    if len(bad) and len(good):
        covered = bad.mean() <= good.mean()
        why += (f"Coverage is {'not' if covered else 'part of'} the problem: training never "
                f"updated {good.mean():.1%} of the usable cells in the games that converge and "
                f"{bad.mean():.1%} in those that do not"
                + ("; the harder games are visited more widely, just not yet consistently. "
                   if covered else ". "))
    why += (f"The larger budgets were tried on {ladder_seeds} seeds each, so they say what "
            "suffices, not a tight minimum (what each training took is in timings.csv).")
    return " ".join([s1, s2, s3]), why


def _figure(table: pd.DataFrame, budget: pd.DataFrame, prices: tuple[int, ...],
            rounds: tuple[int, ...]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9), gridspec_kw={"width_ratios": [1, 1, 1.2]})
    for ax, name in zip(axes[:2], PRESET_NAMES, strict=True):
        t = table[table["preset"] == name]
        grid = t.pivot(index="P", columns="T", values="nash_conv").loc[list(prices),
                                                                        list(rounds)]
        zero = t.pivot(index="P", columns="T", values="share_at_zero").loc[list(prices),
                                                                            list(rounds)]
        im = ax.imshow(grid.to_numpy(), cmap="viridis", vmin=0, vmax=1, origin="lower")
        for i in range(len(prices)):
            for j in range(len(rounds)):
                v, z = grid.to_numpy()[i, j], zero.to_numpy()[i, j]
                ax.text(j, i, f"{v:.2f}\n{z:.0%} at 0", ha="center", va="center", fontsize=7,
                        color="white" if v < 0.5 else "black")
        ax.set_xticks(range(len(rounds)), [str(r) for r in rounds])
        ax.set_yticks(range(len(prices)), [str(p) for p in prices])
        ax.set_xlabel("rounds T")
        if name == PRESET_NAMES[0]:
            ax.set_ylabel("price levels P")
        ax.set_title(f"NashConv, preset {name}", fontsize=9)
    fig.colorbar(im, ax=axes[:2], shrink=0.8, label="NashConv (mean over seeds)")
    ax = axes[2]
    base = PRESETS["default"].total_episodes
    d = table[table["preset"] == "default"]
    for (P, T), b in budget.groupby(["P", "T"], sort=True):
        first = d[(d["P"] == P) & (d["T"] == T)]
        x = np.r_[base, b["episodes_per_seed"].to_numpy()]
        y = np.r_[first["nash_conv"].to_numpy(), b["nash_conv"].to_numpy()]
        (line,) = ax.plot(x, y, marker="o", label=f"P={P} T={T}")
        ok = b["share_at_zero"].to_numpy() >= CONVERGED
        ax.plot(b["episodes_per_seed"].to_numpy()[ok], b["nash_conv"].to_numpy()[ok], "*",
                ms=13, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("training episodes per seed (default preset, stretched)")
    ax.set_ylabel("NashConv (mean)")
    ax.set_title("games the default budget does not solve (star: converged)", fontsize=9)
    if len(budget):
        ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return fig
