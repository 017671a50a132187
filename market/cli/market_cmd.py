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
import math
import time
from pathlib import Path
from typing import Any

from market.cli.common import check_output_dir, emit_json, int_in
from market.errors import UsageError
from market.limits import check_table_cells

HELP = "run a market of many Buyers and Sellers with mixed strategies"

TRADERS_MAX = 2_000_000
STEPS_MAX = 1_000_000



def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--buyers", type=int_in("--buyers", 1, TRADERS_MAX), default=50,
                   help="number of Buyers (default 50)")
    p.add_argument("--sellers", type=int_in("--sellers", 1, TRADERS_MAX), default=50,
                   help="number of Sellers (default 50)")
    p.add_argument("--buyer-mix", default="averaging", metavar="MIX",
                   help="strategy shares of the Buyers, e.g. averaging=0.5,qlearning=0.5 "
                        "(default averaging; a name may be qlearning:FILE.npz)")
    p.add_argument("--seller-mix", default="averaging", metavar="MIX",
                   help="strategy shares of the Sellers (default averaging)")
    p.add_argument("--steps", type=int_in("--steps", 1, STEPS_MAX), default=100,
                   help="steps to run (default 100)")
    p.add_argument("--period", type=int_in("--period", 1, STEPS_MAX), default=10,
                   help="steps per trading period K; one unit per trader per period (default 10)")
    p.add_argument("--prices", type=int_in("--prices", 2, 1000), default=5,
                   help="price levels P (default 5)")
    p.add_argument("--rounds", type=int_in("--rounds", 1, 1000), default=5,
                   help="rounds T (default 5)")
    p.add_argument("--seed", type=int_in("--seed", 0), default=0,
                   help="seed of every random draw (default 0)")
    p.add_argument("--first", choices=("random", "seller", "buyer"), default="random",
                   help="who opens each negotiation (default random per pair)")
    p.add_argument("--value-range", default="0,100", metavar="LO,HI",
                   help="Buyers' values drawn uniformly in [LO, HI] (default 0,100)")
    p.add_argument("--cost-range", default="0,100", metavar="LO,HI",
                   help="Sellers' costs drawn uniformly in [LO, HI] (default 0,100)")
    p.add_argument("--distribution", choices=("uniform", "normal", "triangular"),
                   default="uniform", help="shape of values and costs in their ranges")
    p.add_argument("--redraw", action="store_true",
                   help="draw new values and costs every period (default: kept)")
    p.add_argument("--teams", type=int_in("--teams", 1, TRADERS_MAX), default=None,
                   help="teams per side (default: every trader alone)")
    p.add_argument("--common-wallet", action="store_true",
                   help="pool earnings per team (needs --teams)")
    p.add_argument("--clock", action="store_true",
                   help="market clock: learners see the steps left and delay costs")
    p.add_argument("--drawn-learners", action="store_true",
                   help="draw each Q-learner's learning parameters (lr, gamma, exploration)")
    p.add_argument("--agent-data", choices=("period", "step", "none"), default="period",
                   help="when to record agent-level data (default: end of each period)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="write the model, periods, prices and agents tables (Parquet), "
                        "summary.json and market.png")


def parse_mix(text: str, flag: str) -> dict[str, float]:
    """``"a=0.5,b=0.5"`` (a bare ``"a"`` is ``a=1``) -> shares, checked by the model's rule."""
    from market.sim.model import check_mix

    mix: dict[str, float] = {}
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        name, eq, share = part.partition("=")
        name = name.strip()
        if not eq:
            share = "1"
        try:
            value = float(share)
        except ValueError:
            raise UsageError(
                f"{flag}: share of {name!r} must be a number (got {share!r})"
            ) from None
        if name in mix:
            raise UsageError(f"{flag}: strategy {name!r} is named twice")
        mix[name] = value
    try:
        return check_mix(flag, mix)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def parse_range(text: str, flag: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise UsageError(f"{flag} must be two numbers LO,HI with LO < HI (got {text!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"{flag} must be two finite numbers LO,HI with LO < HI (got {text!r})")
    return lo, hi


def _check_tables(args: argparse.Namespace, mixes: dict[str, dict[str, float]]) -> None:
    """Refuse Q-learner populations too large for memory before building anything."""
    n = {"buyer": args.buyers, "seller": args.sellers}
    learners = sum(
        n[side] * share for side, mix in mixes.items() for k, share in mix.items()
        if k.partition(":")[0] == "qlearning"
    )
    buckets = min(args.period, 4) if args.clock else 1
    cells = learners * 2 * buckets * (2 + args.prices * args.rounds) * (args.prices + 2)
    check_table_cells(cells, "the Q-learners' tables",
                      "lower --prices/--rounds or the number of qlearning traders")


def run(args: argparse.Namespace) -> int:
    mixes = {
        "buyer": parse_mix(args.buyer_mix, "--buyer-mix"),
        "seller": parse_mix(args.seller_mix, "--seller-mix"),
    }
    value_range = parse_range(args.value_range, "--value-range")
    cost_range = parse_range(args.cost_range, "--cost-range")
    if args.common_wallet and args.teams is None:
        raise UsageError("--common-wallet needs --teams K (the number of teams per side)")
    _check_tables(args, mixes)
    check_output_dir(args.out, "--out")

    from market.sim.model import MarketModel

    t0 = time.perf_counter()
    model = MarketModel(
        n_buyers=args.buyers,
        n_sellers=args.sellers,
        buyer_mix=mixes["buyer"],
        seller_mix=mixes["seller"],
        prices=args.prices,
        rounds=args.rounds,
        period=args.period,
        redraw=args.redraw,
        value_range=value_range,
        cost_range=cost_range,
        value_dist=args.distribution,
        cost_dist=args.distribution,
        first=args.first,
        teams=args.teams,
        common_wallet=args.common_wallet,
        clock=args.clock,
        learner_params="drawn" if args.drawn_learners else "fixed",
        agent_data=args.agent_data,
        seed=args.seed,
    )
    _run_steps(model, args.steps, quiet=args.json)
    seconds = time.perf_counter() - t0
    summary = model.summary()
    per_strategy = _strategy_table(model)
    files = _write_outputs(model, args, summary) if args.out is not None else []

    if args.json:
        emit_json(_clean({
            "parameters": _parameters(args, mixes, value_range, cost_range),
            "summary": summary,
            "strategies": per_strategy,
            "files": [str(f) for f in files],
            "seconds": seconds,
        }))
        return 0
    _print_summary(model, args, summary, per_strategy, files, seconds)
    return 0


def _run_steps(model: Any, steps: int, quiet: bool) -> None:
    from market.cli.progress import progress_bar

    with progress_bar("market", steps, "steps", quiet=quiet) as update:
        for _ in range(steps):
            model.step()
            update(advance=1)


def _strategy_table(model: Any) -> list[dict[str, Any]]:
    """Per side and strategy: traders, mean earnings, mean wallet, trades per trader."""
    df = model.agents_frame()
    g = df.groupby(["side", "strategy"], sort=True)
    out = g.agg(
        traders=("unique_id", "size"),
        mean_earnings=("earnings", "mean"),
        mean_wallet=("wallet", "mean"),
        trades_per_trader=("trades", "mean"),
    ).reset_index()
    return out.to_dict(orient="records")


def _write_outputs(model: Any, args: argparse.Namespace, summary: dict[str, float]) -> list[Path]:
    """Build every output in memory first, then write each atomically."""
    import json

    from market.files import save_figure, write_parquet, write_text
    from market.plots.market import plot_market

    model_df = model.model_frame()
    periods_df = model.periods_frame()
    prices_df = model.prices_frame()
    agents_df = model.agent_frame()
    eq = model.equilibrium
    fig = plot_market(
        model_df, model.values, model.costs, model.grid,
        title=(f"{args.sellers} sellers ({args.seller_mix}) x {args.buyers} buyers "
               f"({args.buyer_mix}), P={args.prices}, T={args.rounds}, K={args.period}, "
               f"band {eq.price_lo:.1f}-{eq.price_hi:.1f}"),
        prices_df=prices_df,
    )
    text = json.dumps(_clean(summary), indent=2) + "\n"
    out: Path = args.out
    files = [
        write_parquet(model_df, out / "model.parquet"),
        write_parquet(periods_df, out / "periods.parquet"),
        write_parquet(prices_df, out / "prices.parquet"),
        write_parquet(agents_df, out / "agents.parquet"),
        write_text(text, out / "summary.json"),
        save_figure(fig, out / "market.png"),
    ]
    return files


def _parameters(args: argparse.Namespace, mixes: dict, vr: tuple, cr: tuple) -> dict[str, Any]:
    return {
        "buyers": args.buyers, "sellers": args.sellers, "buyer_mix": mixes["buyer"],
        "seller_mix": mixes["seller"], "steps": args.steps, "period": args.period,
        "prices": args.prices, "rounds": args.rounds, "seed": args.seed, "first": args.first,
        "value_range": list(vr), "cost_range": list(cr), "distribution": args.distribution,
        "redraw": args.redraw, "teams": args.teams, "common_wallet": args.common_wallet,
        "clock": args.clock, "drawn_learners": args.drawn_learners,
    }


def _clean(obj: Any) -> Any:
    """NaN -> None so the JSON is valid."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not hasattr(obj, "__len__"):
        return _clean(obj.item())
    return obj


def _fmt(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def _print_summary(
    model: Any, args: argparse.Namespace, s: dict[str, float], per_strategy: list[dict[str, Any]],
    files: list[Path], seconds: float,
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    head = Table(
        title=(f"Market: {args.sellers} sellers x {args.buyers} buyers, {int(s['steps'])} steps "
               f"({int(s['periods'])} periods of {args.period}), P={args.prices}, T={args.rounds}, "
               f"seed {args.seed}"),
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
    head.add_row("run time", f"{seconds:.2f} s")
    console.print(head)
    table = Table(title="Earnings per strategy and side (per trader, run total)")
    for col in ("side", "strategy", "traders", "mean earnings", "mean wallet", "trades/trader"):
        table.add_column(col, justify="left" if col in ("side", "strategy") else "right")
    for r in per_strategy:
        table.add_row(r["side"], r["strategy"], f"{r['traders']:,}", _fmt(r["mean_earnings"]),
                      _fmt(r["mean_wallet"]), _fmt(r["trades_per_trader"]))
    console.print(table)
    for f in files:
        console.print(f"wrote {f}")
