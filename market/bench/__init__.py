"""``python run.py bench``: throughput figures, each next to a reference timed in the same run.

Each section is a module of this package with ``TITLE`` and
``run(repeats: int, quick: bool) -> list[BenchRow]``. Figures are medians of
``repeats`` runs; ratios compare with a reference measured in the same run,
because the machines are shared and noisy.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

SECTIONS = ["training", "market", "batch"]


@dataclass
class BenchRow:
    section: str
    metric: str
    value: float
    unit: str
    note: str = ""
    target: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    """Median wall time of ``repeats`` calls of ``fn`` (and all the times)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def available_sections() -> list[str]:
    out = []
    for name in SECTIONS:
        try:
            importlib.import_module(f"market.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"market.bench.{name}":
                raise
            continue
        out.append(name)
    return out


def run_sections(names: list[str], repeats: int, quick: bool) -> list[BenchRow]:
    rows: list[BenchRow] = []
    for name in names:
        mod = importlib.import_module(f"market.bench.{name}")
        rows.extend(mod.run(repeats=repeats, quick=quick))
    return rows
