"""Measure throughput: training, market steps, batch runs (medians of several runs).

Every figure with a target is marked met or missed, and a summary line
counts them; ``--check`` exits with status 1 when a target is missed, so a
script can tell.
"""

from __future__ import annotations

import argparse

from market.cli import common
from market.cli.common import emit_json, int_in, only_sections
from market.cli.progress import progress_bar

HELP = "benchmarks: training, market and batch throughput against in-run references"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from market.bench import SECTIONS

    p.add_argument("--only", default=None,
                   help=f"comma-separated sections ({','.join(SECTIONS)}); default all")
    p.add_argument("--repeats", type=int_in("--repeats", 1, 50), default=5,
                   help="runs per figure; the median is reported (default 5)")
    p.add_argument("--quick", action="store_true", help="smaller workloads (a smoke test)")
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 if any target is missed")


def sections(only: str | None) -> list[str]:
    """The sections ``--only`` names (all by default); one line naming the choices if bad."""
    from market.bench import SECTIONS

    return only_sections(only, SECTIONS)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    from market.bench import missed, run_sections

    names = sections(args.only)
    with progress_bar("bench", len(names), "sections", quiet=args.json) as update:
        rows = run_sections(names, args.repeats, args.quick,
                            on_section=lambda i, name: update(completed=i, description=name))
    failed = missed(rows)
    with_target = [r for r in rows if r.target is not None]
    if args.json:
        emit_json({"rows": [r.as_dict() for r in rows], "targets": len(with_target),
                   "missed": len(failed)})
        return 1 if args.check and failed else 0
    table = Table(title=f"Benchmarks (median of {args.repeats} runs)")
    for col in ("section", "metric", "value", "unit", "spread", "target", "status", "note"):
        table.add_column(col, justify="right" if col in ("value", "spread") else "left")
    for r in rows:
        status = {"met": "[green]met[/green]", "missed": "[bold red]MISSED[/bold red]"}.get(
            r.status, "")
        spread = f"{common.figure(r.spread[0])}-{common.figure(r.spread[1])}" if r.spread else ""
        table.add_row(r.section, r.metric, common.figure(r.value), r.unit, spread,
                      str(r.target or ""), status, r.note)
    # piped output would wrap at rich's default 80 columns; a bench table reads better wide
    console = common.console()
    console.print(table)
    met = len(with_target) - len(failed)
    line = f"targets: {met} of {len(with_target)} met"
    if failed:
        line += "; missed: " + "; ".join(f"{r.section}: {r.metric}" for r in failed)
    console.print(line, style="bold red" if failed else "bold green", highlight=False)
    return 1 if args.check and failed else 0


