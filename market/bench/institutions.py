"""Institutions: a trading period of the double auction and of the call market against one of
bilateral pairs, and batch runs of small double-auction markets.

The markets are zero-intelligence traders (``zi-c``, both sides) with drawn
values, P = 20, periods of 10 steps: the same strategies in each
institution. A period of each institution is timed alternately on markets
built once (the first period warms them up), so the ratios compare the
three in the same minutes. The batch row runs 100-trader double-auction
markets of 100 steps through the batch runner in one warmed process, as
``run.py batch`` would.
"""

from __future__ import annotations

import statistics
import time

from market.bench import BenchRow, at_least, at_most, spread
from market.sim.institutions import INSTITUTIONS

TITLE = "institutions: double auction and call market against pairs (ZI-C, P=20)"
PERIOD = 10
MIX = {"zi-c": 1.0}


def _periods(traders: int, repeats: int) -> dict[str, list[float]]:
    """Seconds per period of each institution, timed alternately."""
    from market.sim.model import MarketModel

    half = traders // 2
    models = {i: MarketModel(institution=i, n_buyers=half, n_sellers=half, buyer_mix=MIX,
                             seller_mix=MIX, prices=20, period=PERIOD, seed=0)
              for i in INSTITUTIONS}
    times: dict[str, list[float]] = {i: [] for i in INSTITUTIONS}
    for r in range(repeats + 1):
        for i, m in models.items():
            t0 = time.perf_counter()
            for _ in range(PERIOD):
                m.step()
            if r:  # the first period warms up
                times[i].append(time.perf_counter() - t0)
    return times


def _batch_rate(runs: int, steps: int, repeats: int) -> list[float]:
    """Runs per second of 100-trader double-auction markets, one warmed process."""
    from market.bench.batch import timed
    from market.runs import batch

    grid = {"institution": ["cda"], "n_buyers": [50], "n_sellers": [50],
            "buyer_mix.zi-c": [1.0], "seller_mix.zi-c": [1.0]}
    pool = batch.process_pool(1)
    try:
        timed(pool, 1, 2, 2, seed=999, grid=grid)  # start and warm the worker
        return [runs / timed(pool, 1, runs, steps, seed=r, grid=grid)
                for r in range(repeats)]
    finally:
        pool.shutdown()


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    traders = 2_000 if quick else 10_000
    times = _periods(traders, repeats)
    med = {i: statistics.median(t) for i, t in times.items()}
    label = f"{traders // 2:,} + {traders // 2:,} traders"
    rows = [BenchRow("institutions", f"time per period, {label}, {i}", med[i] * 1e3, "ms",
                     spread=tuple(x * 1e3 for x in spread(times[i])),
                     note=f"median of {repeats} periods of {PERIOD} steps")
            for i in INSTITUTIONS]
    for i in ("cda", "call"):
        ratios = [a / b for a, b in zip(times[i], times["pairs"], strict=True)]
        rows.append(BenchRow("institutions", f"{i} period / pairs period, {label}",
                             statistics.median(ratios), "x",
                             target=at_most(3, "<= 3x") if i == "cda" else None,
                             spread=spread(ratios), note="timed alternately, period by period"))
    steps = 20 if quick else 100
    rates = _batch_rate(4 if quick else 20, steps, repeats)
    rows.append(BenchRow("institutions", f"runs/s per process, 100-trader cda ({steps}-step)",
                         statistics.median(rates), "runs/s",
                         target=None if quick else at_least(50, ">= 50"), spread=spread(rates),
                         note="through the batch runner, one warmed process"))
    return rows
