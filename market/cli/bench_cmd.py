"""Measure throughput: training, market steps, batch runs (medians of several runs)."""

from __future__ import annotations

import argparse
import sys

from market.cli.common import emit_json, int_in
from market.errors import UsageError

HELP = "benchmarks: training, market and batch throughput against in-run references"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", default="", help="comma-separated sections (training,market,batch)")
    p.add_argument("--repeats", type=int_in("--repeats", 1, 50), default=5,
                   help="runs per figure; the median is reported (default 5)")
    p.add_argument("--quick", action="store_true", help="smaller workloads (a smoke test)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from market.bench import available_sections, run_sections

    have = available_sections()
    names = [s.strip() for s in args.only.split(",") if s.strip()] or have
    unknown = [s for s in names if s not in have]
    if unknown:
        raise UsageError(f"--only: unknown section {unknown[0]!r} (choose from: {', '.join(have)})")
    rows = run_sections(names, args.repeats, args.quick)
    if args.json:
        emit_json([r.as_dict() for r in rows])
        return 0
    table = Table(title=f"Benchmarks (median of {args.repeats} runs)")
    for col in ("section", "metric", "value", "unit", "target", "note"):
        table.add_column(col, justify="right" if col == "value" else "left")
    for r in rows:
        value = f"{r.value:,.3g}" if abs(r.value) < 100 else f"{r.value:,.0f}"
        table.add_row(r.section, r.metric, value, r.unit, r.target, r.note)
    # piped output would wrap at rich's default 80 columns; a bench table reads better wide
    Console(width=None if sys.stdout.isatty() else 140).print(table)
    return 0
