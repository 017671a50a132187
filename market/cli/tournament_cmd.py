"""Round-robin tournament of the registered strategies on the two-agent game.

Every strategy that can sell plays every strategy that can buy, with each
first mover, ``--repetitions`` times each; payoffs are the document's
two-agent rewards (Seller p/P, Buyer 1 - p/P at a deal on level p). Writes
the payoff matrices as CSV (rows: strategy as Seller, columns: as Buyer) and
a heatmap PNG to ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from market.cli import common
from market.cli.common import (
    add_pressure,
    emit_json,
    int_in,
    int_range,
    number_in,
    path_text,
    pressure,
)
from market.cli.progress import progress_bar
from market.errors import UsageError
from market.files import check_output_dir, check_outputs
from market.limits import PRICES_MAX, ROUNDS_MAX

HELP = "every strategy against every other on both sides: payoff matrix (CSV) and heatmap (PNG)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategies", default="",
                   help="comma-separated strategy names or specs such as "
                   "negmas:NaiveTitForTatNegotiator (default: every registered strategy but "
                   "negmas and genius, which play at NegMAS's speed)")
    p.add_argument("--repetitions", type=int_in("--repetitions", 1, 1_000_000), default=100,
                   help="negotiations per pairing and first mover (default 100)")
    p.add_argument("--prices", type=int_in("--prices", 2, PRICES_MAX), default=5,
                   help="price levels P (default 5)")
    p.add_argument("--rounds", type=int_in("--rounds", 1, ROUNDS_MAX), default=5,
                   help="rounds T (default 5)")
    add_pressure(p)  # time pressure: payoffs discounted and costed per offer, breakdowns
    p.add_argument("--seller-range", type=int_range("--seller-range"),
                   default=None, metavar="LO,HI",
                   help="Seller's acceptable levels (default: 1,P, the whole range; LO-HI is "
                   "accepted too)")
    p.add_argument("--buyer-range", type=int_range("--buyer-range"),
                   default=None, metavar="LO,HI",
                   help="Buyer's acceptable levels (default: 1,P, the whole range; LO-HI is "
                   "accepted too)")
    p.add_argument("--qtable", type=path_text("--qtable"), default=None, metavar="FILE.npz",
                   help="Q-tables for the qlearning entrant (default: trained by self-play "
                   "once, under a second once the training kernel is compiled, and kept in "
                   "DIR for later runs)")
    p.add_argument("--genius", default=None, metavar="N|AGENTS",
                   help="add ANAC agents (NegMAS's negmas-genius-agents): the first N, "
                   "competition by competition from 2010, or a comma list such as "
                   "AgentK,HardHeaded; they play at NegMAS's speed, one negotiation at a time")
    p.add_argument("--dynamics", type=_dynamics, default=(), metavar="NAMES",
                   help="evolutionary dynamics on the mean payoffs, comma-separated: "
                   "replicator, ecological (Axelrod's), moran (fixation probabilities), "
                   "alpharank")
    p.add_argument("--population", type=int_in("--population", 2, 10_000), default=50,
                   help="population size N of the Moran process and alpha-Rank (default 50)")
    p.add_argument("--selection", type=number_in("--selection", 0, 1_000), default=10.0,
                   metavar="W", help="selection intensity: fitness exp(W * payoff), payoffs "
                   "in [0, 1] (alpha-Rank's alpha; default 10)")
    p.add_argument("--start", default=None, metavar="MIX",
                   help="shares the trajectories start from, e.g. averaging=0.5,boulware=0.5 "
                   "(default: equal shares)")
    p.add_argument("--generations", type=int_in("--generations", 1, 1_000_000), default=1000,
                   help="generations of the ecological dynamics (default 1000)")
    p.add_argument("--seed", type=int_in("--seed", 0), default=0, help="seed (default 0)")
    p.add_argument("--out", type=path_text("--out"), default="out/tournament", metavar="DIR",
                   help="directory for the CSV files and the heatmap (default out/tournament)")


def _dynamics(text: str) -> tuple[str, ...]:
    from market.runs.dynamics import DYNAMICS

    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    bad = [n for n in names if n not in DYNAMICS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"--dynamics must name some of {', '.join(DYNAMICS)} "
                                         f"(got {text!r})")
    return names


def run(args: argparse.Namespace) -> int:
    from market.runs.tournament import output_files, plan_tournament, run_tournament, write_outputs

    plan = plan_tournament(args.prices, args.rounds, args.strategies, args.repetitions,
                           args.seed, args.seller_range, args.buyer_range, args.genius,
                           args.qtable, quiet=args.json, pressure=pressure(args))
    start = None
    if args.start is not None:
        from market.sim.params import parse_mix

        start = parse_mix(args.start, "--start")
        if not start or any(not v >= 0 for v in start.values()) or sum(start.values()) <= 0:
            raise UsageError(f"--start must give shares >= 0, not all 0 (got {args.start!r})")
        if not args.dynamics:
            raise UsageError("--start needs --dynamics replicator or ecological")
    check_output_dir(args.out, "--out")
    cache = Path(args.out) / plan.cache_name
    check_outputs({**{f: "--out" for f in output_files(args.out, args.dynamics)},
                   cache: "--out"})
    with progress_bar("tournament", None, quiet=args.json) as update:
        def trained(done: int, total: int) -> None:
            update(description="training the qlearning entrant by self-play (episodes per "
                   "seed)", completed=done, total=total)

        entrants = plan.entrants(cache, trained)
        both = [e.name for e in entrants if {"seller", "buyer"} <= set(e.sides)]
        from market.runs.dynamics import check_start

        check_start(start, both)  # before any pairing is played
        pairings = (sum("seller" in e.sides for e in entrants)
                    * sum("buyer" in e.sides for e in entrants))
        update(description="pairings", completed=0, total=pairings)
        result = run_tournament(entrants, plan.protocol, plan.repetitions, plan.seed,
                                plan.seller_range, plan.buyer_range,
                                on_pairing=lambda _s, _b: update(advance=1))
        evolution = None
        if args.dynamics:
            from market.runs.dynamics import evolve

            update(description="evolutionary dynamics on the mean payoffs", phase=True)
            evolution = evolve(result.mean_payoff, list(args.dynamics), args.population,
                               args.selection, start, args.generations)
        update(description="writing the tables and drawing the heatmap", phase=True)
        files = write_outputs(result, Path(args.out), evolution)
    if args.json:
        data = result.as_dict()
        if evolution is not None:
            data["dynamics"] = evolution.as_dict()
        data["files"] = [str(f) for f in files]
        emit_json(data)
        return 0
    print_result(result, files, evolution)
    return 0


def print_result(result, files, evolution=None) -> None:  # noqa: ANN001 - rich types lazy
    from rich.table import Table

    console = common.console()
    P, T = result.protocol.prices, result.protocol.rounds
    sp, deal = result.seller_payoff, result.deal_rate
    cols = list(sp.columns)
    table = Table(title=f"Seller's payoff x 100, row as Seller vs column as Buyer (P={P}, "
                        f"T={T}, {result.repetitions} per pairing and first mover)")
    table.add_column("Seller \\ Buyer", no_wrap=True)
    for j, _ in enumerate(cols):
        table.add_column(str(j + 1), justify="right", no_wrap=True)
    for r in sp.index:
        cells = [f"{100 * sp.loc[r, c]:.0f}" + ("*" if deal.loc[r, c] < 1 else "")
                 for c in cols]
        num = f"{cols.index(r) + 1} " if r in cols else ""
        table.add_row(f"{num}{r}", *cells)
    table.caption = ("columns: " + ", ".join(f"{j + 1} {c}" for j, c in enumerate(cols))
                     + ";  * some negotiations ended without a deal (see deal_rate.csv)")
    console.print(table)
    rank = Table(title="Mean payoff over both sides and all opponents")
    rank.add_column("strategy")
    rank.add_column("mean payoff", justify="right")
    rank.add_column("as Seller", justify="right")
    rank.add_column("as Buyer", justify="right")
    for name, v in result.ranking().items():
        rank.add_row(str(name), f"{v:.3f}", f"{sp.loc[name].mean():.3f}",
                     f"{result.buyer_payoff[name].mean():.3f}")
    console.print(rank)
    if evolution is not None:
        console.print(_evolution_table(evolution))
    for name, note in result.notes.items():
        console.print(f"{name}: {note}")
    for f in files:
        console.print(f"wrote {f}")


def _evolution_table(evolution):  # noqa: ANN001, ANN202 - rich types imported lazily
    from rich.table import Table

    frame = evolution.table()
    ends = "; ".join(f"{name} {'at rest' if t.at_rest else 'still moving'} at "
                     f"{t.shares.index.name} {t.shares.index[-1]:g}"
                     for name, t in evolution.trajectories.items())
    table = Table(title=f"Which strategies survive (N={evolution.population}, selection "
                        f"{evolution.selection:g})", caption=ends or None)
    table.add_column("strategy")
    for col in frame.columns:
        table.add_column(col, justify="right")
    for name, row in frame.iterrows():
        table.add_row(str(name), *(f"{v:.3f}" for v in row))
    return table
