"""Batch throughput: market runs per second per process, and the speed-up from 1 to 2 processes.

Each run is a 100-trader market (50 a side, half averaging and half
Q-learning on each side) stepped 100 times, built and summarised exactly as
``run.py batch`` does (:func:`market.runs.batch.run_batch`, no output file). The
pools are started and warmed before the clock starts, so the figures are
the steady state of a long batch, not process start-up; one worker runs
through the same pool machinery as two, so the speed-up compares like with
like. The machine's cores are shared, so the speed-up is measured in the
same run, repeat by repeat.
"""

from __future__ import annotations

import os
import statistics
import time

from market.bench import BenchRow, at_least

TITLE = "batch throughput (100-trader, 100-step markets)"

GRID = {
    "n_buyers": [50],
    "n_sellers": [50],
    "buyer_mix.qlearning": [0.5],
    "seller_mix.qlearning": [0.5],
}


def _specs(runs: int, steps: int, seed: int, grid: dict | None = None) -> list:
    from market.runs import batch

    checked = batch.validate_grid(dict(GRID if grid is None else grid))
    return batch.expand(checked, runs, seed, steps)


def timed(pool, processes: int, runs: int, steps: int, seed: int,  # noqa: ANN001
          grid: dict | None = None) -> float:
    """Seconds ``runs`` runs of ``grid`` (default :data:`GRID`) take through the batch
    runner on ``pool``, built and summarised as ``run.py batch`` does."""
    from market.runs import batch

    specs = _specs(runs, steps, seed, grid)
    t0 = time.perf_counter()
    res = batch.run_batch(specs, None, processes=processes, executor=pool)
    elapsed = time.perf_counter() - t0
    if res.failed:
        raise RuntimeError(f"benchmark runs failed: {res.table['error'].dropna().iloc[0]}")
    return elapsed


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    from market.runs import batch

    steps = 20 if quick else 100
    runs = 4 if quick else 32  # a batch's own few ms (its table, the pool's latency) weigh as
    #                            little as in a long batch (8 runs a repeat: a fifth and more)
    pools = {n: batch.process_pool(n) for n in (1, 2)}
    try:
        for n, pool in pools.items():  # start and warm every worker
            timed(pool, n, 2 * n, 2, seed=999)
        times: dict[int, list[float]] = {1: [], 2: []}
        for r in range(repeats):
            for n in (1, 2):
                times[n].append(timed(pools[n], n, runs, steps, seed=r))
    finally:
        for pool in pools.values():
            pool.shutdown()
    rate = {n: [runs / t / n for t in ts] for n, ts in times.items()}
    speedups = [a / b for a, b in zip(times[1], times[2], strict=True)]
    med = {n: statistics.median(v) for n, v in rate.items()}
    label = f"{steps}-step" if quick else "100-step"
    return [
        BenchRow("batch", f"runs/s per process, 1 process ({label})", med[1], "runs/s",
                 target=None if quick else at_least(200, ">= 200"),
                 note=f"{runs} runs a repeat; {min(rate[1]):.2f}-{max(rate[1]):.2f}; "
                      f"{1 / med[1]:.2f} s a run"),
        BenchRow("batch", f"runs/s per process, 2 processes ({label})", med[2], "runs/s",
                 note=f"{min(rate[2]):.2f}-{max(rate[2]):.2f}"),
        BenchRow("batch", "speed-up 1 -> 2 processes", statistics.median(speedups), "x",
                 target=at_least(1.5, ">= 1.5x (2 idle cores)"),
                 note=f"{min(speedups):.2f}-{max(speedups):.2f}; {os.cpu_count()} cores, "
                      "shared with other work"),
    ]
