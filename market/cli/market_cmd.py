"""Run one marketplace: many Sellers and Buyers pairing up and bargaining, period after period.

Prints earnings per strategy and side, allocative efficiency and the mean
price against the competitive-equilibrium band; with ``--out DIR`` writes
the model table (one row per step), the period table, the transaction
prices (per step and price level: how many deals), the agent table (one
row per trader per period) as Parquet, a summary JSON and a PNG of
transaction prices against the competitive band beside the supply and
demand curves. Every input is checked before anything runs, and files are
written whole or not at all.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from market.cli import common
from market.cli.common import add_flags, discounts, emit_json, flag_dest, int_in, path_text
from market.cli.progress import progress_bar
from market.errors import UsageError
from market.files import (
    all_or_nothing,
    check_output_dir,
    check_outputs,
    save_figure,
    write_parquet,
    write_text,
)
from market.jsonable import finite
from market.limits import STEPS_MAX
from market.sim import institutions
from market.sim.declared import BY_NAME, ENGINES, PARAMETERS, flag_names

if TYPE_CHECKING:  # the model is imported late: Mesa is heavy
    from market.sim.model import MarketModel

HELP = "run a market of many Buyers and Sellers with mixed strategies"

#: the files ``--out DIR`` receives, all checked before the run and written all or none
OUTPUT_FILES = ("model.parquet", "periods.parquet", "prices.parquet", "agents.parquet",
                "summary.json", "market.png")
#: and, when traders revise their strategies, these
REVISION_FILES = ("shares.parquet", "shares.png")
#: summary keys the printed table lays out itself; any other metric marked ``show`` gets a row
LAID_OUT = {"efficiency", "deals", "mean_price", "price_std", "ce_price_lo", "ce_price_hi",
            "ce_quantity", "buyer_share", "seller_share"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_flags(p, PARAMETERS)  # every market parameter that has a flag, from its declaration
    p.add_argument("--steps", type=int_in("--steps", 1, STEPS_MAX), default=100,
                   help="steps to run (default 100)")
    p.add_argument("--seed", type=int_in("--seed", 0), default=0,
                   help="seed of every random draw (default 0)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="how steps run: auto (compiled when every strategy has a compiled "
                        "rule, default), compiled, or lockstep (each strategy's act; the same "
                        "tables, slower; plays a rule numba cannot compile as Python)")
    p.add_argument("--out", type=lambda text: Path(path_text("--out")(text)), default=None,
                   metavar="DIR",
                   help="write the model, periods, prices and agents tables (Parquet), "
                        "summary.json and market.png")


def parameter_values(args: argparse.Namespace) -> dict[str, Any]:
    """The market parameters the flags gave, as :func:`market.sim.params.check` takes them
    (mixes and ranges parsed, naming their flags)."""
    from market.sim import params

    out: dict[str, Any] = {}
    for d in PARAMETERS:
        if d.flag is None:
            continue
        given = getattr(args, flag_dest(d.flag))
        if d.switch is not None:
            given = d.switch if given else d.default
        elif d.kind == "mix":
            given = params.parse_mix(given, d.flag)
        elif d.kind == "range":
            given = params.parse_range(given, d.flag)
        out[d.name] = given
    return out


def run(args: argparse.Namespace) -> int:
    from market.sim import params

    p = params.check(parameter_values(args), names=flag_names(), steps=args.steps)
    if args.common_wallet and args.teams is None:
        raise UsageError("--common-wallet needs --teams K (the number of teams per side)")
    check_output_dir(args.out, "--out")
    if args.out is not None:
        check_outputs({args.out / name: "--out" for name in _output_files(p)})

    from market.sim.model import MarketModel

    t0 = time.perf_counter()
    with progress_bar("market: building", None, quiet=args.json):  # millions of traders:
        model = MarketModel(p, seed=args.seed, engine=args.engine)  # seconds, said
    t1 = time.perf_counter()  # built: a first run's compile is its own line, not the run's
    _run_steps(model, args.steps, quiet=args.json)
    seconds, build = time.perf_counter() - t1, t1 - t0
    with progress_bar("market: the summary and the files", None, quiet=args.json):
        summary = model.summary()
        per_strategy = _strategy_table(model)
        files = _write_outputs(model, args, summary) if args.out is not None else []

    if args.json:
        emit_json(finite({
            "parameters": _parameters(args, p),
            "summary": summary,
            "strategies": per_strategy,
            "files": [str(f) for f in files],
            "seconds": seconds,
            "build_seconds": build,
        }))
    else:
        _print_summary(model, args, summary, per_strategy, files, seconds, build)
    with progress_bar("market: releasing the traders' memory", None, quiet=args.json):
        del model  # millions of Mesa agents: seconds, said (not a silent wait before exit)
        gc.collect()
    return 0


def _run_steps(model: MarketModel, steps: int, quiet: bool) -> None:
    """``steps`` steps, a period at a time (``model.run``: a period's steps in one compiled
    call where it can), the bar moving with each."""
    with progress_bar("market", steps, "steps", quiet=quiet) as update:
        while steps > 0:
            n = min(steps, model.params.period)
            model.run(n)
            steps -= n
            update(advance=n)


def _strategy_table(model: Any) -> list[dict[str, Any]]:
    """Per side and strategy: traders now, mean earnings under it per trader now, what its
    traders earned under it in all (those who left it included), mean wallet, trades per
    trader. Earnings count for the strategy that earned them: a trader that changed
    strategy brings none of its past earnings to the new one."""
    import numpy as np

    from strategies import specs

    m = model.market
    df = m.agents_now()
    rows = []
    for side, side_name in ((0, "seller"), (1, "buyer")):
        book, names = m.books[side], m.names[side]
        counts = m.counts(side)
        under = np.bincount(book.strategy, weights=book.under_current(), minlength=len(names))
        earned = book.earned_under(len(names))
        mine = df[df["side"] == side_name]
        for g, name in enumerate(names):
            playing = mine[mine["strategy"] == name]
            if counts[g] == 0 and earned[g] == 0:
                continue
            rows.append({"side": side_name, "strategy": specs.label(name),
                         "traders": int(counts[g]),
                         "mean_earnings": under[g] / counts[g] if counts[g] else math.nan,
                         "earned": float(earned[g]),
                         "mean_wallet": float(playing["wallet"].mean()) if counts[g] else math.nan,
                         "trades_per_trader": float(playing["trades"].mean()) if counts[g]
                         else math.nan})
    return sorted(rows, key=lambda r: (r["side"], r["strategy"]))


def _output_files(p: Any) -> tuple[str, ...]:
    """The files ``--out`` receives: with strategy revision, also the shares and their plot."""
    return OUTPUT_FILES + (REVISION_FILES if p.revision != "none" else ())


def _write_outputs(model: Any, args: argparse.Namespace, summary: dict[str, float]) -> list[Path]:
    """Build every output in memory first, then write them all or none."""

    from market.plots.market import plot_market

    model_df = model.datacollector.get_model_vars_dataframe()
    periods_df = model.datacollector.get_table_dataframe("periods")
    prices_df = model.datacollector.get_table_dataframe("prices")
    agents_df = model.datacollector.agent_frame()
    eq = model.ledger.equilibrium
    fig = plot_market(
        model_df, model.buyers.reservation, model.sellers.reservation, model.market.grid,
        title=(f"{args.sellers} sellers ({args.seller_mix}) x {args.buyers} buyers "
               f"({args.buyer_mix}), P={args.prices}, T={args.rounds}, K={args.period}, "
               f"band {eq.price_lo:.1f}-{eq.price_hi:.1f}"),
        prices_df=prices_df,
    )
    text = json.dumps(finite(summary), indent=2) + "\n"
    revising = model.params.revision != "none"
    if revising:
        from market.plots.shares import plot_shares

        shares_df = model.datacollector.get_table_dataframe("shares")
        shares_fig = plot_shares(shares_df, title=f"strategy shares, revision "
                                 f"{model.params.revision} (rate {args.revision_rate:g})")
    out: Path = args.out
    with all_or_nothing():
        files = [
            write_parquet(model_df, out / "model.parquet"),
            write_parquet(periods_df, out / "periods.parquet"),
            write_parquet(prices_df, out / "prices.parquet"),
            write_parquet(agents_df, out / "agents.parquet"),
            write_text(text, out / "summary.json"),
            save_figure(fig, out / "market.png"),
        ]
        if revising:
            files += [write_parquet(shares_df, out / "shares.parquet"),
                      save_figure(shares_fig, out / "shares.png")]
    return files


#: what only drawn values read (a named or written schedule fixes them)
DRAWN_ONLY = ("value_range", "cost_range", "value_dist", "cost_dist")


def _recorded(d: Any, p: Any) -> bool:
    """Whether the run records parameter ``d``: every parameter of the original market that
    the run reads (not the value ranges and distribution under a schedule); an extension's
    where it is used (its value not the default, or its family's switch on)."""
    if d.name in DRAWN_ONLY and p.schedule != "drawn":  # a schedule fixes values and costs
        return False
    if not d.extension or getattr(p, d.name) != d.default:
        return True
    if d.family is None:
        return False
    return getattr(p, d.family) != BY_NAME[d.family].default


def _parameters(args: argparse.Namespace, p: Any) -> dict[str, Any]:
    """The run's parameters as the command took them, by flag (mixes normalised, ranges as
    pairs); the time costs only where asked for, as each side's factor, and an extension's
    only where it is used (:func:`_recorded`)."""
    out: dict[str, Any] = {"steps": args.steps, "seed": args.seed}
    for d in PARAMETERS:
        if d.flag is None or "discount" in d.name or not _recorded(d, p):
            continue
        key = flag_dest(d.flag)
        out[key] = (getattr(p, d.name) if d.kind == "mix"
                    else list(getattr(p, d.name)) if d.kind == "range"
                    else getattr(args, key))
    if discounts(args) is not None:  # recorded only where asked for, as the game's default
        out["seller_discount"], out["buyer_discount"] = p.discounts
    return out


def _time_costs(args: argparse.Namespace) -> str:
    """The title's words for the time costs, if any were asked for."""
    d = discounts(args)
    return "" if d is None else f"discount {d[0]:g} (Seller) / {d[1]:g} (Buyer), "


def _fmt(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _fmt_any(x: float) -> str:
    """A whole number with thousands separators, else three decimals."""
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{int(x):,}" if float(x).is_integer() else f"{x:.3f}"


def _many(n: int, word: str) -> str:
    """``1 period``, ``5,000,000 sellers``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


#: the summary's words for an institution other than bilateral bargaining
def _institution(args: argparse.Namespace) -> str:
    """The title's words for a market that does not bargain in pairs (none for one that
    does: the summary reads as it always has)."""
    inst = institutions.get(args.institution)
    return "" if inst.bilateral else f" ({inst.words})"


def _print_summary(
    model: Any, args: argparse.Namespace, s: dict[str, float], per_strategy: list[dict[str, Any]],
    files: list[Path], seconds: float, build: float,
) -> None:
    from rich.table import Table

    from market.sim.ledger import METRICS
    from market.sim.partners import LABELS as partner_labels

    console = common.console()
    head = Table(
        title=(f"Market{_institution(args)}: {_many(args.sellers, 'seller')} x "
               f"{_many(args.buyers, 'buyer')}, {_many(int(s['steps']), 'step')} "
               f"({_many(int(s['periods']), 'period')} of {args.period:,}), "
               f"P={args.prices}, "
               f"{f'T={args.rounds}, ' if institutions.get(args.institution).bilateral else ''}"
               f"{_time_costs(args)}seed {args.seed}"),
        show_header=False,
    )
    head.add_column("metric")
    head.add_column("value", justify="right")
    band = f"{_fmt(s['ce_price_lo'])} - {_fmt(s['ce_price_hi'])}"
    mean, lo, hi = s["mean_price"], s["ce_price_lo"], s["ce_price_hi"]
    if not (math.isfinite(mean) and math.isfinite(lo)):
        where = ""
    elif lo <= mean <= hi:
        where = "mean inside"
    else:
        where = f"mean {lo - mean:.2f} below" if mean < lo else f"mean {mean - hi:.2f} above"
    head.add_row("allocative efficiency", _fmt(s["efficiency"], 3))
    head.add_row("deals", f"{int(s['deals']):,}")
    head.add_row("mean price (std)", f"{_fmt(s['mean_price'])} ({_fmt(s['price_std'])})")
    head.add_row("competitive band (last period)",
                 f"{band}  {where}".rstrip())
    head.add_row("competitive quantity (last period)", f"{int(s['ce_quantity']):,}")
    head.add_row("surplus share buyers / sellers",
                 f"{_fmt(s['buyer_share'], 3)} / {_fmt(s['seller_share'], 3)}")
    for m in METRICS:  # any other metric marked to be shown: one row each
        if m.show and m.key not in LAID_OUT and m.key in s:
            head.add_row(m.label or m.key, _fmt_any(s[m.key]))
    for key, label in partner_labels.items():  # under partner choice: the last period's
        if key in s:
            head.add_row(f"{label} (last period)", _fmt_any(s[key]))
    head.add_row("run time", f"{seconds:.2f} s (building {build:.2f} s)")
    console.print(head)
    table = Table(title="Earnings per strategy and side (run total, under the strategy)",
                  caption="mean earnings: what a trader now playing it earned under it; earned "
                          "in all: what every trader earned under it, those who left it "
                          "included; mean wallet: what its traders hold, earnings under "
                          "earlier strategies (and a team's pool) included",
                  caption_justify="left")
    for col in ("side", "strategy", "traders", "mean earnings", "earned in all", "mean wallet",
                "trades/trader"):
        table.add_column(col, justify="left" if col in ("side", "strategy") else "right")
    for r in per_strategy:
        table.add_row(r["side"], r["strategy"], f"{r['traders']:,}", _fmt(r["mean_earnings"]),
                      _fmt(r["earned"]), _fmt(r["mean_wallet"]), _fmt(r["trades_per_trader"]))
    console.print(table)
    for f in files:
        console.print(f"wrote {f}")
