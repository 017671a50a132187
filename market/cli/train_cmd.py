"""Train a Seller and a Buyer Q-learner the document's way, then test them greedily.

``--preset seed`` is the document's exact configuration (frozen trainer,
alternating trainee, 50 cycles x 100 episodes, 1,000 test episodes);
``--preset default`` is tuned so that self-play converges (role-aware tables,
both sides learning at once). Explicit options override the preset. With
``--seeds N`` the N seeds train in parallel (each with its own random
stream, so a seed's tables do not depend on N) and the figures are medians
with 10th-90th percentiles across seeds. The first run on a machine compiles
the training kernel (about 10 seconds, said on stderr); later runs load it.
``--test-loop original`` plays the greedy test the way the original
project's code did: the first mover's observation is never updated, so it
repeats its opening offer and never accepts.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from market.cli import common
from market.cli.common import add_discounts, add_flags, discounts, emit_json, flag_dest, path_text
from market.cli.progress import progress_bar
from market.errors import UsageError
from market.files import all_or_nothing, check_output_path
from market.game import qtable
from market.game.pressure import PRESSURE
from market.game.train_config import TrainConfig
from market.limits import check_time
from market.parameters import declarations

HELP = "train Q-learners (the document's trainer or the tuned default) and test them"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=("seed", "default", "perfect"), default="default",
                   help="seed: the document's configuration; default: tuned to converge; "
                   "perfect: default with exploring starts on every episode, a deal bonus of "
                   "0.001 and 10x the episodes, for subgame perfection (time costs)")
    # every declared field of the config that has a flag; None: the preset's value stands
    add_flags(p, declarations(TrainConfig), defaults=False)
    p.add_argument("--first", choices=("seller", "buyer"), default=None, dest="first_old",
                   help="old name of --trained-first (still accepted, with a note)")
    add_discounts(p)  # the game's time costs: the learners' rewards discounted per offer
    p.add_argument("--plot", type=path_text("--plot"), metavar="FILE.png",
                   help="save the training figure")
    p.add_argument("--save", type=path_text("--save"), metavar="FILE.npz",
                   help="save the final tables (of the first seed)")
    p.add_argument("--load", type=path_text("--load"), metavar="FILE.npz",
                   help="start from (or, with --cycles 0, test) saved tables")
    p.add_argument("--tables", action="store_true",
                   help="also print the final Q-tables (raw and normalised; 150 lines and more "
                   "at the default size)")
    p.add_argument("--no-tables", action="store_true", help=argparse.SUPPRESS)  # the old default


def _config(args: argparse.Namespace, loaded: Any | None) -> Any:
    """The training's config from the flags (and the tables ``--load`` read, whose game it
    keeps), checked: one line for whatever cannot be trained."""
    from market.game.training import check_size, preset

    over = {d.name: getattr(args, flag_dest(d.flag))
            for d in declarations(TrainConfig) if d.flag is not None}
    over["first"] = _trained_first(args)
    ds, db = discounts(args) or (1.0, 1.0)
    over.update(seller_discount=ds, buyer_discount=db)
    if loaded is not None:
        over.update(_loaded_game(args, loaded, over))
    if args.cycles == 0 and loaded is None:
        raise UsageError("--cycles must be >= 1 (0 is allowed only with --load, to test)")
    for opt, path, ext in (("--plot", args.plot, ".png"), ("--save", args.save, ".npz")):
        if path is not None and not path.lower().endswith(ext):
            raise UsageError(f"{opt} must name a {ext} file (got {path!r})")
        check_output_path(path, opt)
    cfg = preset(args.preset, **over)
    check_size(cfg, "lower --prices, --rounds or --seeds")
    if args.plot and not cfg.total_episodes:
        raise UsageError("--plot needs at least one training cycle (--cycles >= 1)")
    if args.first_old is not None:  # once every check passed: an error stays one line
        print(f"{common.PROG} train: note: --first is now --trained-first (the side trained in the "
              "first cycle, not the first mover)", file=sys.stderr)
    return cfg


def _trained_first(args: argparse.Namespace) -> str | None:
    """``--trained-first``, or its old name ``--first`` (the two must agree)."""
    first = args.trained_first
    if args.first_old is not None:
        if first is not None and first != args.first_old:
            raise UsageError(f"--first {args.first_old} contradicts --trained-first {first} "
                             "(--first is the old name of --trained-first)")
        first = args.first_old
    return first


def _loaded_game(args: argparse.Namespace, loaded: Any, over: dict[str, Any]) -> dict[str, Any]:
    """The game of the tables ``--load`` read (sizes, layout, every kind of time pressure),
    which the flags may repeat but not contradict."""
    out: dict[str, Any] = dict(prices=loaded.protocol.prices, rounds=loaded.protocol.rounds,
                               role_aware=loaded.role_aware)
    if args.prices is not None and args.prices != loaded.protocol.prices or (
        args.rounds is not None and args.rounds != loaded.protocol.rounds
    ):
        raise UsageError(
            f"--load: {args.load} holds tables for P={loaded.protocol.prices}, "
            f"T={loaded.protocol.rounds}, not the requested --prices/--rounds"
        )
    if loaded.seller.shape[0] != loaded.buyer.shape[0]:
        raise UsageError(f"--load: {args.load} mixes role-aware and document-layout tables")
    have = (loaded.protocol.seller_discount, loaded.protocol.buyer_discount)
    given = common.pressure(args)  # a side not given is the file's
    want = (given.get("seller_discount", have[0]), given.get("buyer_discount", have[1]))
    if want != have:
        raise UsageError(f"--load: {args.load} holds tables trained with discount Seller "
                         f"{have[0]:g}, Buyer {have[1]:g}, not the requested Seller "
                         f"{want[0]:g}, Buyer {want[1]:g}")
    for d in PRESSURE:  # the rest of the game's time pressure: the file's, or refused
        mine = getattr(loaded.protocol, d.name)
        if d.flag and over.get(d.name) is not None and over[d.name] != mine:
            raise UsageError(f"--load: {args.load} holds tables trained with {d.name} "
                             f"{mine:g}, not the requested {over[d.name]:g}")
        out[d.name] = mine
    return out


def _progress_runner(cfg: Any, start: Any, quiet: bool) -> Any:
    """Train with a progress bar on a terminal (the commands' one helper).

    The bar counts training episodes per seed (``cycles x episodes``, what
    the heading says); the greedy test is its own step. A first-time compile
    is announced on stderr whatever the terminal.
    """
    from market.game.training import train

    unit = f"episodes x {cfg.seeds:,} seed(s)"
    with progress_bar("train", max(cfg.total_episodes, 1), unit, quiet=quiet) as update:
        def status(message: str) -> None:
            if message == "greedy test":
                update(description="greedy test", completed=0, total=max(cfg.test_episodes, 1))
            else:
                print(f"{common.PROG} train: {message}", file=sys.stderr, flush=True)

        return train(cfg, start, progress=lambda done, _total: update(completed=done),
                     status=status)


def estimated_seconds(cfg: Any) -> float:
    """The run's cost on this kind of machine (:meth:`TrainConfig.estimated_seconds`)."""
    return float(cfg.estimated_seconds())


def check_cost(cfg: Any, quiet: bool) -> None:
    """Refuse a training estimated over an hour, with the estimate; say it first when it is
    over ten seconds (the progress bar shows only on a terminal)."""

    check_time(estimated_seconds(cfg), f"training {cfg.seeds:,} seed(s) of "
               f"{cfg.total_episodes:,} episodes at P={cfg.prices}, T={cfg.rounds}",
               "lower --seeds, --cycles or --episodes", quiet)


def run(args: argparse.Namespace) -> int:
    from market.game.table_files import TablePair, save_tables
    from market.game.training import summarize

    loaded = _load(args.load) if args.load else None
    cfg = _config(args, loaded)
    check_cost(cfg, args.json)
    t0 = time.perf_counter()
    res = _progress_runner(cfg, loaded, args.json)
    wall = time.perf_counter() - t0
    summary = _summary(res, wall, summarize)
    with all_or_nothing():  # the figure and the tables, both or neither
        if args.plot:
            from market.plots.training import plot_history

            plot_history(res.history, args.plot, title=_title(cfg))
            summary["plot"] = args.plot
        if args.save:
            meta = {**cfg.as_dict(), "nash_conv": float(res.test["nash_conv"].iloc[0]),
                    "seed_index": 0}
            save_tables(args.save, TablePair(res.protocol, res.seller[0], res.buyer[0], meta))
            summary["saved"] = args.save
    if args.json:
        emit_json(summary)
        return 0
    _print(res, summary, args)
    return 0


def _load(path: str) -> Any:
    from market.game.table_files import load_tables

    try:
        return load_tables(path)
    except ValueError as exc:
        raise UsageError(f"--load: {exc}") from None


def _title(cfg: Any) -> str:
    both = "both learning at once" if cfg.scheme == "simultaneous" else (
        f"both trained in turn, {cfg.first.capitalize()} trained first")
    who = {"both": both, "seller": "only Seller trained", "buyer": "only Buyer trained"}[cfg.train]
    return f"{cfg.scheme} scheme, {who}, P={cfg.prices} T={cfg.rounds}"


STAT_ROWS = (
    ("deals", "validated (deals)"),
    ("rejected", "rejected"),
    ("seller_validated", "validated by Seller"),
    ("buyer_validated", "validated by Buyer"),
    ("seller_rejected", "rejected by Seller"),
    ("buyer_rejected", "rejected by Buyer"),
    ("seller_wallet", "Seller wallet"),
    ("buyer_wallet", "Buyer wallet"),
)


def stat_rows(cfg: Any) -> tuple[tuple[str, str], ...]:
    """The counts a run reports: in a game whose talks may end after a counter-offer, those
    that did too (not counted as rejected)."""
    return STAT_ROWS + ((("breakdowns", "broke down"),) if cfg.protocol.risky else ())


def _summary(res: Any, wall: float, summarize: Any) -> dict[str, Any]:
    cfg = res.config
    h = res.history
    rows = stat_rows(cfg)
    broke = "breakdowns" in h.columns
    train_tot = h.groupby("seed")[[c for c, _ in rows if c != "rejected"]].sum() if len(
        h) else None
    test = res.test.copy()
    test["rejected"] = cfg.test_episodes - test["deals"] - (test["breakdowns"] if broke else 0)
    out: dict[str, Any] = {
        "config": cfg.as_dict(),
        "train_seconds": res.train_seconds,
        "train_seconds_per_seed": res.train_seconds / cfg.seeds,
        "wall_seconds": wall,
        "training": {"total": cfg.total_episodes},
        "test": {"total": cfg.test_episodes},
    }
    if train_tot is not None:
        train_tot["rejected"] = cfg.total_episodes - train_tot["deals"] - (
            train_tot["breakdowns"] if broke else 0)
        out["training"].update({c: summarize(train_tot[c]) for c, _ in rows})
    out["test"].update({c: summarize(test[c]) for c, _ in rows})
    for c in ("exact_seller_wallet", "exact_deals"):
        if c in test:
            out["test"][c] = summarize(test[c])
    out["nash_conv"] = summarize(test["nash_conv"])
    out["nash_conv_at_zero"] = int((test["nash_conv"] < 1e-9).sum())
    out["subgame_perfect"] = subgame_perfect(res)
    out["per_seed"] = test.to_dict(orient="list")
    return out


def subgame_perfect(res: Any) -> int:
    """How many seeds' final tables, played greedily, are subgame perfect: no profitable
    one-shot deviation in any subgame, reachable or not (the training guide's check)."""
    from market.game import evaluation

    gaps = evaluation.subgame_gaps(res.seller, res.buyer, res.protocol)
    return int((gaps.reshape(len(gaps), -1).max(axis=1) == 0).sum())


def _fmt(s: dict[str, float], many: bool, digits: int = 0) -> str:
    f = f"{{:,.{digits}f}}"
    if not many:
        return f.format(s["median"])
    return f"{f.format(s['median'])}  ({f.format(s['p10'])}-{f.format(s['p90'])})"


def _print(res: Any, summary: dict[str, Any], args: argparse.Namespace) -> None:
    from rich.table import Table

    console = common.console()
    cfg = res.config
    many = cfg.seeds > 1
    loop = " (the original test loop)" if cfg.test_loop == "original" else ""
    console.print(f"[bold]{_title(cfg)}[/bold]")
    console.print(f"{cfg.cycles} cycles x {cfg.episodes:,} episodes, {cfg.test_episodes:,} "
                  f"test episodes{loop}, {cfg.seeds} seed(s) from seed {cfg.seed}")
    spread = " (median, 10th-90th percentile across seeds)" if many else ""
    stats = Table(title=f"Global statistics{spread}")
    stats.add_column("")
    stats.add_column(f"training ({cfg.total_episodes:,})", justify="right")
    stats.add_column(f"greedy test ({cfg.test_episodes:,})", justify="right")
    for key, label in stat_rows(cfg):
        tr = summary["training"].get(key)
        stats.add_row(label, _fmt(tr, many) if tr else "-", _fmt(summary["test"][key], many))
    if "exact_seller_wallet" in summary["test"]:
        stats.add_row("Seller wallet, exact expectation", "",
                      _fmt(summary["test"]["exact_seller_wallet"], many, 1))
        stats.add_row("deals, exact expectation", "", _fmt(summary["test"]["exact_deals"], many, 1))
    console.print(stats)
    if args.tables:
        _print_tables(console, cfg, res, many)
    else:
        console.print("Q-tables not shown (--tables prints them; --save keeps them)")
    nc = summary["nash_conv"]
    console.print(f"NashConv of the final tables: [bold]{_fmt(nc, many, 3)}[/bold]"
                  + (f"; {summary['nash_conv_at_zero']} of {cfg.seeds} seeds at 0" if many else ""))
    perfect = summary["subgame_perfect"]
    console.print("subgame perfect (no profitable one-shot deviation in any subgame): "
                  + (f"{perfect} of {cfg.seeds} seeds" if many else
                     ("yes" if perfect else "no")))
    console.print(f"training time: {res.train_seconds:.2f} s "
                  f"({res.train_seconds / cfg.seeds:.3f} s per seed)")
    for key in ("plot", "saved"):
        if key in summary:
            console.print(f"{'figure' if key == 'plot' else 'tables'} written to {summary[key]}")


def _print_tables(console: Any, cfg: Any, res: Any, many: bool) -> None:
    """The first seed's final Q-tables, raw then normalised; an untrained side said in a line."""
    which = f" (first seed, seed {cfg.seed})" if many else ""
    pair = {"seller": res.seller[0], "buyer": res.buyer[0]}
    shown = tuple(s for s in ("seller", "buyer") if not blank(pair[s], res.protocol, cfg.init))
    for normalised in (False, True):
        for t in q_tables(res.seller[0], res.buyer[0], res.protocol, cfg.init, normalised,
                          sides=shown):
            t.title = (t.title or "") + which
            console.print(t)
    for side in ("seller", "buyer"):
        if side not in shown:
            console.print(f"{side.capitalize()} Q-table: untrained (every cell at its "
                          f"initial value {cfg.init:g}), not shown")


def blank(tables: np.ndarray, protocol: Any, init: float) -> bool:
    """Whether every legal cell of ``tables`` (R, S, A) is still at its initial value."""
    from market.game.qtable import legal_rows

    return bool((tables[:, legal_rows(protocol)] == init).all())


def q_tables(seller: np.ndarray, buyer: np.ndarray, protocol: Any, init: float,
             normalised: bool, sides: tuple[str, ...] = ("seller", "buyer")) -> list[Any]:
    """Rich tables of the Q-tables of ``sides``, one per side and role.

    Untrained cells (still at their initial value, or illegal) are blank, as
    in the document. Normalised: each row divided by its sum (rows of
    non-negative values read as preferences), blank where zero.
    """
    from rich.table import Table

    states = qtable.row_labels(protocol)
    acts = [a if a not in ("accept", "reject") else a[:3] for a in protocol.action_labels()]
    roles = seller.shape[0]
    kind = "normalised" if normalised else "raw"
    out = []
    for r in range(roles):
        role = "" if roles == 1 else (", moved first" if r == 0 else ", moved second")
        for name, tab, style in (("Seller", seller[r], "cyan"), ("Buyer", buyer[r], "magenta")):
            if name.lower() not in sides:
                continue
            blank = qtable.untrained(tab, protocol, init)
            t = Table(title=f"{name} Q-table, {kind}{role}", padding=(0, 1))
            t.add_column("state")
            for a in acts:
                t.add_column(a, justify="right", style=style)
            for i, label in enumerate(states):
                row = tab[i]
                untrained = blank[i]
                if normalised:
                    pos = np.where(untrained, 0.0, np.maximum(row, 0.0))
                    tot = pos.sum()
                    vals = pos / tot if tot > 0 else pos
                    cells = [f"{v:.2f}" if v > 0 else "" for v in vals]
                else:
                    cells = ["" if u else f"{v:.3f}" for v, u in zip(row, untrained, strict=True)]
                t.add_row(f"[{i:2d}] {label}", *cells)
            out.append(t)
    return out
