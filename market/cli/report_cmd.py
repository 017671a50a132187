"""Regenerate the research report: the document's questions, answered by measurement.

Runs every section's experiment (or those --only names) with this project's
training, exact evaluation, market and batch runs, then writes DIR/report.md
with its figures (PNG) and tables (CSV). Every number comes from the run and
depends only on --seed; --quick uses few seeds and small markets (a smoke
test, about 20 seconds on an idle 2-core machine). Nothing is written until
every section has run, and each file is written atomically; an existing DIR is fine (the report's
files are replaced).
"""

from __future__ import annotations

import argparse
import time

from market.cli import common
from market.cli.common import emit_json, int_in, only_sections
from market.cli.progress import progress_bar
from market.files import check_output_dir

HELP = "the research report: the document's questions answered, figures and tables in DIR"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from market.report import SECTIONS

    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for report.md, its figures and tables (created if missing)")
    p.add_argument("--quick", action="store_true",
                   help="few seeds and small markets: a smoke test (about 20 s on an idle "
                   "2-core machine; timings.csv records each part)")
    p.add_argument("--only", default=None, metavar="NAME[,NAME]",
                   help=f"comma-separated sections ({','.join(SECTIONS)}); default all")
    p.add_argument("--seed", type=int_in("--seed", 0, 2**32 - 1), default=0,
                   help="the seed every random choice flows from (default 0)")
    p.add_argument("--processes", type=int_in("--processes", 1, 256), default=None,
                   help="processes for the market batches (default: all cores; "
                   "the numbers do not depend on it)")


def sections(only: str | None) -> list[str]:
    """The sections ``--only`` names (all by default); one line naming the choices if bad."""
    from market.report import SECTIONS

    return only_sections(only, SECTIONS)


def run(args: argparse.Namespace) -> int:
    from market import report
    from market.report.section import Context, cores

    names = sections(args.only)
    check_output_dir(args.out, "--out")

    def bar(label: str, total: float | None, unit: str = ""):  # noqa: ANN202
        return progress_bar(label, total, unit, quiet=args.json)

    ctx = Context(seed=args.seed, quick=args.quick, processes=args.processes or cores(),
                  progress=bar, out=args.out)
    t0 = time.perf_counter()
    done = report.run(names, ctx)
    seconds = time.perf_counter() - t0
    with bar("report", None) as update:  # the figures take seconds to draw
        update(description="drawing the figures and writing the tables")
        files = report.write(args.out, done, ctx, seconds)
    summary = {
        "out": args.out, "seed": args.seed, "quick": args.quick, "seconds": seconds,
        "report": str(files[-1]),
        "sections": [{"name": s.name, "title": s.title, "seconds": s.seconds,
                      "question": s.question, "answer": s.answer, "command": s.command,
                      "figures": list(s.figures), "tables": list(s.tables),
                      "numbers": s.numbers} for s in done],
    }
    if args.json:
        emit_json(summary)
        return 0
    from rich.table import Table

    console = common.console()
    table = Table(title=f"Report: {len(done)} section(s) in {seconds:.0f} s")
    for col in ("section", "seconds", "files"):
        table.add_column(col, justify="right" if col == "seconds" else "left")
    for s in done:
        table.add_row(s.name, f"{s.seconds:.1f}", ", ".join(s.files()))
    console.print(table)
    made = sum(len(s.files()) for s in done)
    extra = ", ".join(f.name for f in files[:-1] if f.name in ("tests.csv", "timings.csv"))
    console.print(f"wrote {files[-1]}, the sections' {made} figure and table file(s)"
                  + (f" and {extra}" if extra else ""), highlight=False)
    return 0
