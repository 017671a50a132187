"""Compile ahead what a first run compiles: the market engine, the two-agent game and the
training kernel, for the built-in strategies.

Once per build (an edit of the package, or another numba, numpy or Python,
makes a new one; see the architecture page): later runs load them in about a
second. The set-up command runs it; without it, the first run of each
compiles what it needs, with a one-line notice. The double auction's and the
call market's engines are compiled too with ``--institution all``.
"""

from __future__ import annotations

import argparse

from market.cli.common import emit_json
from market.cli.progress import progress_bar

HELP = "compile the engines ahead of first use (once per build)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--institution", choices=("pairs", "all"), default="pairs",
                   help="whose market engine: bilateral bargaining's (default) or every "
                        "institution's")


def run(args: argparse.Namespace) -> int:
    from market.compiled import build
    from market.sim import engine
    from market.sim.declared import INSTITUTIONS

    institutions = INSTITUTIONS if args.institution == "all" else ("pairs",)
    with progress_bar("build", None, quiet=args.json) as update:
        update(description="compiling, or loading what this build has compiled")
        took = engine.build_all(institutions, on_compile=lambda: None)
    if args.json:
        emit_json({"folder": str(build.folder()), "seconds": took})
        return 0
    for what, seconds in took.items():
        print(f"{what}: ready in {seconds:.1f} s")
    print(f"in {build.folder()}")
    return 0
