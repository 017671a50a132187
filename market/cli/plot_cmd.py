"""Figures from a batch results table (``run.py batch``): metrics against the swept parameters.

Efficiency and mean price against every swept parameter, and every
strategy's earnings per trader against each population-mix parameter, as
means over runs with 95 % Student-t intervals over iterations. PNGs go to
``--out`` (default: a folder named after the table, beside it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from market.cli.common import emit_json, path_text
from market.cli.progress import progress_bar
from market.files import check_output_dir, check_outputs

HELP = "plot a batch results table: earnings vs mix, efficiency and price vs each parameter"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=path_text("RESULTS"), metavar="RESULTS.parquet",
                   help="a table written by run.py batch")
    p.add_argument("--out", type=path_text("--out"), default=None, metavar="DIR",
                   help="folder for the PNGs (default: RESULTS_plots beside the table)")


def run(args: argparse.Namespace) -> int:

    src = Path(args.results)
    out = Path(args.out) if args.out else src.with_name(src.stem + "_plots")
    check_output_dir(out, "--out")
    with progress_bar("plot", None, "figures", quiet=args.json) as update:
        update(description="loading matplotlib (its first run builds a font cache)")
        import matplotlib

        from market.files import all_or_nothing
        from market.plots.results import result_figures

        matplotlib.use("Agg")
        update(description=f"reading {src.name}")
        figures = result_figures(src, out)  # the table read and checked, the files planned
        check_outputs({f: "--out" for f in figures.files})
        update(description="drawing", completed=0, total=len(figures.files))
        with all_or_nothing():
            files = figures.draw(lambda f: update(advance=1, description=f.name))
    if args.json:
        emit_json({"results": str(src), "files": [str(f) for f in files]})
        return 0
    if not files:
        print(f"{src}: no swept parameter and no earnings columns; nothing to plot")
    for f in files:
        print(f"wrote {f}")
    return 0
