"""Batch runs of the market over a parameter grid, on local cores or a Dask cluster.

Every combination of the grid's values runs ``--iterations`` times; each
run's seed is derived from ``--seed`` and the run's index, so the table is
identical whatever ``--processes`` or ``--scheduler``. Results go to Parquet,
one row per run (parameters, seed, summary metrics, ``error``). Finished
runs are kept in ``OUT.parts/`` until the table is written, so an
interrupted batch started again with the same ``--out`` only runs what is
missing. Mix shares: ``buyer_mix.STRATEGY=SHARE`` (likewise ``seller_mix``);
the rest of the side plays the ``--fill`` strategy (default averaging).
Exit code 1 when some runs failed (their errors are in the table), 2 on bad
input.
"""

from __future__ import annotations

import argparse
import numbers
import os
import sys
import time
from typing import Any

from market.cli import common
from market.cli.common import emit_json, int_in, number_in, path_text
from market.cli.progress import progress_bar
from market.errors import UsageError
from market.files import check_output_path
from market.limits import BATCH_RUNS_MAX, STEPS_MAX
from market.processes import Terminated

HELP = "many market runs over a parameter grid (process pool or Dask), results to Parquet"


def scheduler_address(text: str) -> str:
    """argparse ``type=`` for ``--scheduler``: an address or ``local``, not blank."""
    address = text.strip()
    if not address:
        raise argparse.ArgumentTypeError("--scheduler must be a Dask scheduler's address "
                                         "HOST:PORT or 'local' (got '')")
    return address


def grid_names() -> str:
    """The names a grid sweeps, each with the ``market`` flag that sets it: the epilog of
    ``batch --help`` (one vocabulary: the grid's names are the model's keywords)."""
    from market.sim.declared import PARAMETERS

    said = [f"{d.name} ({d.flag})" if d.flag else d.name for d in PARAMETERS
            if d.kind not in ("mapping",)]
    return ("Grid names (the market's parameters, its flag in brackets): " + ", ".join(said)
            + "; a mix share as buyer_mix.STRATEGY or seller_mix.STRATEGY.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = grid_names()
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a swept parameter of the market model (repeatable), e.g. "
                   "n_buyers=50,100 or buyer_mix.qlearning=0,0.5,1")
    p.add_argument("--grid", type=path_text("--grid"), default=None, metavar="FILE.toml",
                   help="the grid as TOML: NAME = [values]; [buyer_mix] tables for shares")
    p.add_argument("--iterations", type=int_in("--iterations", 1, BATCH_RUNS_MAX), default=5,
                   help="runs per grid point, each with its own seed (default 5)")
    p.add_argument("--steps", type=int_in("--steps", 1, STEPS_MAX), default=100,
                   help="model steps per run (default 100)")
    p.add_argument("--processes", type=int_in("--processes", 1, 4096), default=None,
                   help="worker processes, or Dask workers with --scheduler local "
                   "(default: all cores)")
    p.add_argument("--seed", type=int_in("--seed", 0), default=0,
                   help="batch seed; run seeds derive from it and the run index (default 0)")
    p.add_argument("--common-seeds", action="store_true",
                   help="iteration i of every grid point uses the same seed (common random "
                   "numbers: comparisons between points are paired)")
    p.add_argument("--out", type=path_text("--out"), default="out/batch.parquet",
                   metavar="FILE.parquet",
                   help="results table (default out/batch.parquet); per-step data goes to "
                   "FILE.steps.parquet")
    p.add_argument("--per-step", action="store_true",
                   help="also keep every run's per-step model variables")
    p.add_argument("--fill", default="averaging", metavar="STRATEGY",
                   help="strategy filling each side's share left by *_mix.* (default averaging)")
    p.add_argument("--scheduler", type=scheduler_address, default=None, metavar="ADDRESS|local",
                   help="run on a Dask distributed scheduler (host:port), or 'local' to start "
                   "a LocalCluster on this machine")
    p.add_argument("--connect-timeout", type=number_in("--connect-timeout", 0.1, 3600),
                   default=5.0, metavar="SECONDS",
                   help="how long to try reaching --scheduler, in [0.1, 3600] (default 5)")


def run(args: argparse.Namespace) -> int:
    from market.runs import batch

    grid: dict[str, list[Any]] = {}
    if args.grid:
        grid.update(batch.load_grid_toml(args.grid))
    for key, values in batch.parse_param_options(args.param).items():
        if key in grid:
            raise UsageError(f"--param {key} is also in --grid {args.grid}")
        grid[key] = values
    if not args.out.endswith(".parquet"):
        raise UsageError(f"--out must be a .parquet file (got {args.out!r})")
    check_output_path(args.out, "--out")
    if args.per_step:
        check_output_path(batch.steps_path(args.out), "--per-step")
    grid = batch.validate_grid(grid, fill=args.fill, steps=args.steps)
    specs = batch.expand(grid, args.iterations, args.seed, args.steps, args.fill,
                         args.common_seeds)
    processes = args.processes or os.cpu_count() or 1
    meta = {"seed": args.seed, "iterations": args.iterations, "steps": args.steps,
            "fill": args.fill, **({"common_seeds": True} if args.common_seeds else {})}
    t0 = time.perf_counter()
    try:
        result = _run_with_progress(batch, specs, args, processes, meta)
    except (KeyboardInterrupt, Terminated) as stop:
        # one line, as for every other way a command ends early
        how = "terminated" if isinstance(stop, Terminated) else "interrupted"
        print(f"{common.PROG} batch: {how}; finished runs are kept in {batch.parts_dir(args.out)}: "
              "run the same command again to go on from there", file=sys.stderr, flush=True)
        if isinstance(stop, Terminated) and isinstance(stop.code, int):
            return stop.code  # 143 for SIGTERM, 129 for SIGHUP (the terminal closed)
        return 130
    seconds = time.perf_counter() - t0
    table = result.table
    if args.json:
        emit_json({
            "runs": len(table), "ran": result.ran, "reused": result.reused,
            "failed": result.failed, "redone": result.redone, "seconds": round(seconds, 3),
            "processes": processes, "scheduler": args.scheduler,
            "grid": grid, "files": [str(f) for f in result.files],
            "errors": table.loc[table["error"].notna(), ["run", "error"]].to_dict("records"),
        })
        return 1 if result.failed else 0
    _print_summary(table, grid, result, seconds, processes, args)
    return 1 if result.failed else 0


def _run_with_progress(batch: Any, specs: list, args: argparse.Namespace, processes: int,
                       meta: dict[str, Any]) -> Any:

    where = f"Dask {args.scheduler}" if args.scheduler else f"{processes} process(es)"
    failed = 0
    with progress_bar("batch", len(specs), "runs", quiet=args.json) as update:
        update(description=where)

        def on_result(outcome: Any, done: int, total: int) -> None:
            nonlocal failed
            failed += outcome.failed
            desc = where + (f" [red]{failed} failed[/]" if failed else "")
            update(completed=done, description=desc)

        return batch.run_batch(specs, args.out, processes=processes, scheduler=args.scheduler,
                               per_step=args.per_step, on_result=on_result, meta=meta,
                               connect_timeout=args.connect_timeout)


def _print_summary(table: Any, grid: dict, result: Any, seconds: float, processes: int,
                   args: argparse.Namespace) -> None:
    from rich.table import Table

    console = common.console()
    where = f"Dask {args.scheduler}" if args.scheduler else f"{processes} process(es)"
    console.print(f"{len(table)} runs ({result.ran} run now, {result.reused} reused, "
                  f"{result.failed} failed) in {seconds:.1f} s on {where}")
    if result.redone:
        console.print(f"{result.redone} saved part(s) were damaged or not this batch's and "
                      "were run again")
    ok = table[table["error"].isna()]
    keys = list(grid)
    shown = [c for c in ("efficiency", "mean_price", "deals") if c in table.columns]
    if keys and not ok.empty and shown:
        means = ok.groupby(keys, sort=False)[shown].agg(["mean", "count"])
        points = len(means)
        out = Table(title="Mean over iterations per grid point"
                    + (f" (the first 20 of {points:,})" if points > 20 else ""))
        for k in keys:
            out.add_column(k, justify="right")
        for c in shown:
            out.add_column(c, justify="right")
        out.add_column("runs", justify="right")
        for idx, row in list(means.iterrows())[:20]:
            idx = idx if isinstance(idx, tuple) else (idx,)
            out.add_row(*[_key(v) for v in idx],
                        *[common.figure(row[(c, 'mean')]) for c in shown],
                        str(int(row[(shown[0], "count")])))
        console.print(out)
    for rec in table.loc[table["error"].notna(), ["run", "error"]].head(3).itertuples():
        console.print(f"[red]run {rec.run} failed:[/] {rec.error}")
    for f in result.files:
        console.print(f"wrote {f}")


def _key(value: object) -> str:
    """A grid point's value in the table: whole numbers with thousands separators
    (``5,000,000``), fractions as given (``0.25``), words as they are."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:g}"
