"""Partner choice: a step of the market under ``--matching loyalty`` against one under random pairs,
and the memory of the largest market with loyalty.

Both markets hold averaging traders with drawn values and periods of 10
steps; the loyalty market's Buyers choose with ``beta = 5`` (well inside the
loyal regime for the profits these traders make), so a step is several rounds
of visits. A period of each is timed alternately on markets built once and run
for ten periods first (preferences formed), so the ratio compares the two in
the same minutes. The memory row runs 20 steps of 500,000 + 500,000 traders
with loyalty in a fresh process (:func:`market.bench.market.memory`): each
Buyer remembers at most ``loyalty_memory`` (16) Sellers.
"""

from __future__ import annotations

import statistics
import time

from market.bench import BenchRow, at_most, spread
from market.bench.market import BIG_MIX, memory

TITLE = "partner choice: loyalty against random pairs (averaging traders)"
PERIOD = 10


def _periods(traders: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per step of each matching, a period at a time, timed alternately."""
    from market.sim.model import MarketModel

    half = traders // 2
    models = {m: MarketModel(matching=m, loyalty_beta=5.0, n_buyers=half, n_sellers=half,
                             period=PERIOD, seed=0) for m in ("random", "loyalty")}
    for m in models.values():
        m.run(10 * PERIOD)
    times: dict[str, list[float]] = {m: [] for m in models}
    for _ in range(repeats):
        for name, m in models.items():
            t0 = time.perf_counter()
            for _ in range(PERIOD):
                m.step()
            times[name].append((time.perf_counter() - t0) / PERIOD)
    return times


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    traders = 2_000 if quick else 10_000
    times = _periods(traders, repeats)
    label = f"{traders // 2:,} + {traders // 2:,} traders"
    rows = [BenchRow("partners", f"time per step, {label}, {m}",
                     statistics.median(t) * 1e3, "ms", spread=tuple(x * 1e3 for x in spread(t)),
                     note=f"median of {repeats} periods of {PERIOD} steps")
            for m, t in times.items()]
    ratios = [a / b for a, b in zip(times["loyalty"], times["random"], strict=True)]
    rows.append(BenchRow("partners", f"loyalty step / random step, {label}",
                         statistics.median(ratios), "x",
                         target=None if quick else at_most(1.5, "<= 1.5x"),
                         spread=spread(ratios), note="timed alternately, period by period"))
    big = 100_000 if quick else 1_000_000
    mems = [memory(big, BIG_MIX, matching="loyalty") for _ in range(1 if quick else 2)]
    peak = statistics.median(m["peak_kib"] for m in mems) / 1024
    step = statistics.median(m["step_s"] for m in mems)
    label = f"{big // 2:,} + {big // 2:,} traders, loyalty"
    rows.append(BenchRow("partners", f"time per step, {label}", step * 1e3, "ms",
                         note="median of 19 steps after the first, in a fresh process"))
    rows.append(BenchRow("partners", f"peak memory, {label}", peak, "MiB",
                         target=None if quick else at_most(4096, "<= 4 GiB"),
                         note="peak RSS (VmHWM) of a fresh process, 20 steps"))
    return rows
