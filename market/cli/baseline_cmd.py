"""One Buyer against one Seller, drawn round by round the way the document's legacy view was.

Defaults are the document's legacy numbers: Buyer acceptable 0-80, Seller
20-100, one price level per whole unit, up to 10 rounds, Buyer first, both
splitting the difference (``averaging``), which ends in a deal at 32.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Any

from market.cli import common
from market.cli.common import emit_json, int_in, int_range
from market.errors import UsageError
from market.game import qtable
from market.limits import ROUNDS_MAX, check_table_cells

HELP = "two-agent baseline in the legacy terminal view (DEAL at 32 by default)"

#: whole money units of the price ranges (the grid has one level per unit)
PRICE_MAX = 100_000



class _Range(argparse.Action):
    """``--buyer-range LO,HI`` sets ``--buyer-min`` and ``--buyer-max`` at once."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        side = self.dest.removesuffix("_range")
        setattr(namespace, f"{side}_min", values[0])
        setattr(namespace, f"{side}_max", values[1])


def add_arguments(p: argparse.ArgumentParser) -> None:
    price = lambda name: int_in(name, 0, PRICE_MAX)  # noqa: E731
    for side, lo, hi in (("buyer", 0, 80), ("seller", 20, 100)):
        p.add_argument(f"--{side}-range", type=int_range(f"--{side}-range", 0, PRICE_MAX),
                       action=_Range, metavar="LO,HI", default=argparse.SUPPRESS,
                       help=f"{side}'s acceptable prices, whole units (default {lo},{hi}; "
                       f"--{side}-min/--{side}-max set one end each)")
        for end, default in (("min", lo), ("max", hi)):
            p.add_argument(
                f"--{side}-{end}", type=price(f"--{side}-{end}"), default=default, metavar="PRICE",
                help=f"{side}'s {end}imum acceptable price, whole units (default {default})",
            )
    p.add_argument(
        "--rounds",
        type=int_in("--rounds", 1, ROUNDS_MAX),
        default=None,
        help="rounds T (default 10, or the T of a Q-table file)",
    )
    p.add_argument("--first", choices=("buyer", "seller"), default="buyer",
                   help="who makes the first offer (default buyer, as the legacy code)")
    p.add_argument("--buyer", default="averaging", metavar="STRATEGY",
                   help="registered strategy name or qlearning:FILE.npz (default averaging)")
    p.add_argument("--seller", default="averaging", metavar="STRATEGY",
                   help="registered strategy name or qlearning:FILE.npz (default averaging)")
    p.add_argument("--seed", type=int_in("--seed", 0), default=0,
                   help="seed of every random choice (default 0)")
    p.add_argument("--step", action="store_true",
                   help="wait for a key between rounds, q quits (only when stdin is a terminal)")
    common.add_pressure(p)  # the game's time pressure (a Q-table file's own, by default)


def _check_ranges(args: argparse.Namespace) -> None:
    for side in ("buyer", "seller"):
        lo, hi = getattr(args, f"{side}_min"), getattr(args, f"{side}_max")
        if lo > hi:
            raise UsageError(f"--{side}-min ({lo}) must be <= --{side}-max ({hi})")
    lo = min(args.buyer_min, args.seller_min)
    hi = max(args.buyer_max, args.seller_max)
    if hi <= lo:
        raise UsageError(
            f"the price ranges must span at least two whole units together (got {lo}-{hi})"
        )


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from market.game import play as game
    from market.game.rules import BUYER, SELLER

    _check_ranges(args)
    protocol, grid, note = _game(args)
    players = _players(args, protocol, grid)
    ranges = game.Ranges(
        buyer=(float(args.buyer_min), float(args.buyer_max)),
        seller=(float(args.seller_min), float(args.seller_max)),
    )
    first = BUYER if args.first == "buyer" else SELLER
    record = game.play(
        protocol, grid, players["seller"], players["buyer"], ranges, first,
        np.random.default_rng(args.seed),
    )
    remark = _outside(args, players, grid, ranges, record)
    if args.json:
        _emit(args, protocol, grid, ranges, record, note, remark)
        return 0
    return _show(args, protocol, grid, ranges, record, note, remark)


def _outside(args: argparse.Namespace, players: dict[str, Any], grid: Any, ranges: Any,
             record: Any) -> str:
    """A deal outside a side's acceptable prices, said where it happens (a strategy that is not
    individually rational, such as a Q-table, may make one): '' if none."""
    from market.game import play as game

    if not record.deal:
        return ""
    level = record.deal_level
    said = []
    for side in ("seller", "buyer"):
        lo, hi = game.acceptable_levels(grid, *ranges.of(side))
        if not lo <= level <= hi:
            name = getattr(args, side)
            promised = (getattr(players[side], "classifier", {}) or {}).get(
                "individually_rational", False)
            why = ("breaks its classifier's promise of individual rationality" if promised
                   else "does not promise individual rationality (the strategies table says "
                        "which do)")
            said.append(f"note: the deal lies outside the {side.capitalize()}'s range "
                        f"{ranges.of(side)[0]:g}-{ranges.of(side)[1]:g}: its strategy, "
                        f"{name}, {why}")
    return "\n".join(said)


def _game(args: argparse.Namespace) -> tuple[Any, Any, str]:
    """The game the prices and rounds make, or the one a Q-table file fixes (with a note)."""
    from market.game import play as game
    from strategies import specs as strategy_specs

    lo = min(args.buyer_min, args.seller_min)
    hi = max(args.buyer_max, args.seller_max)
    fixed = strategy_specs.fixed_game({"--seller": args.seller, "--buyer": args.buyer})
    given = common.pressure(args)
    if fixed is None:
        protocol, grid, note = game.game_for(lo, hi, 10 if args.rounds is None else args.rounds)
        return replace(protocol, **given), grid, note
    if args.rounds is not None and args.rounds != fixed[0].rounds:
        raise UsageError(f"--rounds {args.rounds} does not match the Q-table file's "
                         f"T={fixed[0].rounds}")
    common.refuse_other_game("the Q-table file", fixed[0], given)
    sides = [opt.removeprefix("--") for opt in fixed[1]]
    protocol, grid, note = game.game_for(lo, hi, fixed[0].rounds, fixed[0], sides)
    return protocol, grid, f"note: {note}"


def _players(args: argparse.Namespace, protocol: Any, grid: Any) -> dict[str, Any]:
    """Each side's strategy, built for the game (a table-sized one checked first)."""
    from strategies import specs as strategy_specs

    players = {}
    for opt, text in (("--seller", args.seller), ("--buyer", args.buyer)):
        side = opt.removeprefix("--")
        spec = strategy_specs.parse(text, opt)
        cells = qtable.n_rows(protocol) * protocol.n_actions
        if spec.cls.needs_protocol and spec.arg is None:
            check_table_cells(16 * cells, f"{opt} {spec.name} on {grid.prices} price levels and "
                              f"{protocol.rounds} rounds", "narrow the price ranges or lower "
                              "--rounds")
        players[side] = strategy_specs.build(spec, side, protocol, option=opt)
    return players


def _emit(args: argparse.Namespace, protocol: Any, grid: Any, ranges: Any, record: Any,
          note: str, remark: str) -> None:
    from market.game import play as game

    data: dict[str, Any] = {
        "buyer": {"strategy": args.buyer, "range": [args.buyer_min, args.buyer_max],
                  "levels": list(game.acceptable_levels(grid, *ranges.buyer))},
        "seller": {"strategy": args.seller, "range": [args.seller_min, args.seller_max],
                   "levels": list(game.acceptable_levels(grid, *ranges.seller))},
        "grid": {"lo": min(args.buyer_min, args.seller_min),
                 "hi": max(args.buyer_max, args.seller_max), "prices": grid.prices},
        "rounds": protocol.rounds,
        "seed": args.seed,
        **game.record_dict(record, grid),
    }
    if note:
        data["note"] = note
    if remark:
        data["remark"] = remark
    emit_json(data)


def _show(args: argparse.Namespace, protocol: Any, grid: Any, ranges: Any, record: Any,
          note: str, remark: str) -> int:
    """The negotiation drawn round by round; with --step on a terminal, a key per round."""
    from market.view import terminal as lv

    rounds = protocol.rounds
    console = common.console(highlight=False)
    interactive = args.step and sys.stdin.isatty() and console.is_terminal
    if note and not interactive:
        console.print(note)
    # piped, the console is as wide as a line needs; the drawing takes a terminal's 80
    # columns (or $COLUMNS), as the docs show it
    width = console.width if console.is_terminal else int(os.environ.get("COLUMNS", "80") or 80)
    *rounds_shown, outcome = lv.render(record, grid, ranges, rounds, width)
    for i, screen in enumerate(rounds_shown):
        if interactive:  # redraw in place, as the curses screen did
            if i > 0:
                console.print("[dim]any key (or Enter) for the next round, q to quit[/dim]",
                              end="")
                key = lv.read_key()
                console.print()
                if lv.wants_quit(key):
                    console.print(f"stopped after round {i} of {rounds} (this negotiation "
                                  f"ends in round {len(rounds_shown)})")
                    return 0
            console.clear()
            if note:
                console.print(note)
        console.print(screen)
    console.print(outcome)
    if remark:
        console.print(remark)
    return 0
