"""``python run.py bench``: throughput figures, each next to a reference timed in the same run.

Each section is a module of this package with ``TITLE`` and
``run(repeats: int, quick: bool) -> list[BenchRow]``. Figures are medians of
``repeats`` runs, with the spread (lowest to highest run) beside them;
ratios compare with a reference measured in the same run, because the
machines are shared and noisy. A row with a :class:`Target` is marked met
or missed, and ``bench --check`` fails when any target is missed.
"""

from __future__ import annotations

import importlib
import json
import operator
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the sections, in the order they run
SECTIONS = ["training", "market", "bare", "revision", "batch", "institutions", "partners", "view",
            "negmas", "rl"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
}


@dataclass(frozen=True)
class Target:
    """What a figure must reach: ``value op bound`` (e.g. ``>= 5,000,000``)."""

    op: str
    bound: float
    text: str = ""

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"target operator must be one of {', '.join(_OPS)} (got {self.op!r})")

    def met(self, value: float) -> bool:
        return bool(_OPS[self.op](value, self.bound))

    def __str__(self) -> str:
        return self.text or f"{self.op} {self.bound:,g}"


def at_least(bound: float, text: str = "") -> Target:
    return Target(">=", bound, text)


def at_most(bound: float, text: str = "") -> Target:
    return Target("<=", bound, text)


@dataclass
class BenchRow:
    """One figure: its value, unit, spread over repeats, and the target it must meet (if any)."""

    section: str
    metric: str
    value: float
    unit: str
    note: str = ""
    target: Target | None = None
    spread: tuple[float, float] | None = None

    @property
    def status(self) -> str:
        """``met``, ``missed``, or empty for a figure without a target."""
        if self.target is None:
            return ""
        return "met" if self.target.met(self.value) else "missed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "section": self.section, "metric": self.metric, "value": self.value,
            "unit": self.unit, "note": self.note,
            "target": str(self.target) if self.target else "", "status": self.status,
            "spread": list(self.spread) if self.spread else None,
        }


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float]]:
    """Median wall time of ``repeats`` calls of ``fn`` (and all the times)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def fresh_interpreter(code: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter importing this checkout (what a first run costs:
    compiles, cache loads) and return the JSON object of its last line. ``env``: variables
    to set, or to remove (None). The child ends with this process, however it ends."""
    from market.processes import preexec_die_with_parent

    root = str(Path(__file__).resolve().parents[2])
    child = {k: v for k, v in os.environ.items() if (env or {}).get(k, v) is not None}
    child.update({k: v for k, v in (env or {}).items() if v is not None})
    child["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=child, cwd=root, check=True, timeout=600,
                         preexec_fn=preexec_die_with_parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values: Sequence[float]) -> tuple[float, float]:
    """Lowest and highest of the repeats."""
    return (float(min(values)), float(max(values)))


def run_sections(names: list[str], repeats: int, quick: bool,
                 on_section: Callable[[int, str], None] | None = None) -> list[BenchRow]:
    """Run the sections in order; ``on_section(i, name)`` as section ``i`` starts."""
    rows: list[BenchRow] = []
    for i, name in enumerate(names):
        if on_section is not None:
            on_section(i, name)
        mod = importlib.import_module(f"market.bench.{name}")
        rows.extend(mod.run(repeats=repeats, quick=quick))
    return rows


def missed(rows: Sequence[BenchRow]) -> list[BenchRow]:
    return [r for r in rows if r.status == "missed"]
