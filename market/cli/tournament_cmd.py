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
from market.cli.common import add_discounts, discounts, emit_json, int_in, int_range, path_text
from market.cli.progress import progress_bar
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
    add_discounts(p)  # time costs: payoffs discounted per offer, per side
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
    p.add_argument("--seed", type=int_in("--seed", 0), default=0, help="seed (default 0)")
    p.add_argument("--out", type=path_text("--out"), default="out/tournament", metavar="DIR",
                   help="directory for the CSV files and the heatmap (default out/tournament)")


def run(args: argparse.Namespace) -> int:
    from market.runs.tournament import output_files, plan_tournament, run_tournament, write_outputs

    plan = plan_tournament(args.prices, args.rounds, args.strategies, args.repetitions,
                           args.seed, args.seller_range, args.buyer_range, args.genius,
                           args.qtable, quiet=args.json, discount=discounts(args))
    check_output_dir(args.out, "--out")
    cache = Path(args.out) / plan.cache_name
    check_outputs({**{f: "--out" for f in output_files(args.out)}, cache: "--out"})
    with progress_bar("tournament", None, quiet=args.json) as update:
        def trained(done: int, total: int) -> None:
            update(description="training the qlearning entrant by self-play (episodes per "
                   "seed)", completed=done, total=total)

        entrants = plan.entrants(cache, trained)
        pairings = (sum("seller" in e.sides for e in entrants)
                    * sum("buyer" in e.sides for e in entrants))
        update(description="pairings", completed=0, total=pairings)
        result = run_tournament(entrants, plan.protocol, plan.repetitions, plan.seed,
                                plan.seller_range, plan.buyer_range,
                                on_pairing=lambda _s, _b: update(advance=1))
        update(description="writing the tables and drawing the heatmap")
        files = write_outputs(result, Path(args.out))
    if args.json:
        data = result.as_dict()
        data["files"] = [str(f) for f in files]
        emit_json(data)
        return 0
    print_result(result, files)
    return 0


def print_result(result, files) -> None:  # noqa: ANN001 - rich types imported lazily
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
    for name, note in result.notes.items():
        console.print(f"{name}: {note}")
    for f in files:
        console.print(f"wrote {f}")
