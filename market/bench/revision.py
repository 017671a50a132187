"""Strategy revision: what it costs a market, and a long evolving run.

The market under test mixes four families on each side (averaging,
Q-learning, boulware, ZI-C, a quarter each), P = 5, T = 5, periods of 10
steps, and revises by pairwise imitation (rate 0.1, mutation 0.01) at each
period's end. The reference, timed in the same run, is the market's own
stepping: revision's share is the time spent revising (every period's
:meth:`~market.sim.model.MarketModel.revise_strategies`, populations
regrown and the engine bound again included) over the time spent stepping,
both measured in the same periods of the same run. A long run then plays
1,000 + 1,000 traders over 1,000 periods with imitation.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from market.bench import BenchRow, at_most

TITLE = "revision: strategy revision's cost, and a long evolving market"
MIX = {"averaging": 0.25, "qlearning": 0.25, "boulware": 0.25, "zi-c": 0.25}
PERIOD = 10


def _model(traders: int, seed: int = 0):
    from market.sim.model import MarketModel

    half = traders // 2
    return MarketModel(n_buyers=half, n_sellers=half, buyer_mix=MIX, seller_mix=MIX,
                       period=PERIOD, seed=seed, agent_data="none", revision="imitate",
                       revision_rate=0.1, mutation=0.01)


def revision_share(traders: int, periods: int,
                   clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """Seconds spent revising and seconds spent stepping otherwise, over ``periods`` periods
    after two of warm-up.

    ``clock`` is read around every revision and around the whole run; the tests give it a
    counting clock to check what is attributed where without timing anything.
    """
    model = _model(traders)
    revising = [0.0]
    revise = model.revise_strategies

    def timed() -> None:
        t0 = clock()
        revise()
        revising[0] += clock() - t0

    model.revise_strategies = timed  # type: ignore[method-assign]
    for _ in range(2 * PERIOD):
        model.step()
    revising[0] = 0.0
    t0 = clock()
    for _ in range(periods * PERIOD):
        model.step()
    total = clock() - t0
    return revising[0], total - revising[0]


def long_run(traders: int, periods: int) -> float:
    """Seconds to build and run ``periods`` periods of an imitating market."""
    t0 = time.perf_counter()
    model = _model(traders)
    for _ in range(periods * PERIOD):
        model.step()
    return time.perf_counter() - t0


def run(repeats: int, quick: bool) -> list[BenchRow]:
    traders, periods = (2_000, 5) if quick else (10_000, 20)
    shares = [revision_share(traders, periods) for _ in range(max(repeats, 1))]
    ratios = [r / s for r, s in shares]
    label = f"{traders // 2:,} + {traders // 2:,} traders"
    rows = [BenchRow("revision", f"revision's time / stepping time, {label}",
                     statistics.median(ratios) * 100, "%",
                     note=f"median of {len(ratios)} runs of {periods} periods; "
                          f"{min(ratios) * 100:.1f}-{max(ratios) * 100:.1f}%",
                     target=None if quick else at_most(10, "<= 10%"),
                     spread=(min(ratios) * 100, max(ratios) * 100))]
    long_traders, long_periods = (1_000, 100) if quick else (2_000, 1_000)
    runs = [long_run(long_traders, long_periods) for _ in range(1 if quick else 2)]
    rows.append(BenchRow("revision", f"{long_traders // 2:,} + {long_traders // 2:,} traders, "
                         f"{long_periods:,} periods of {PERIOD} steps, imitation",
                         statistics.median(runs), "s",
                         note=f"one core; {min(runs):.1f}-{max(runs):.1f} s",
                         target=None if quick else at_most(30, "< 30 s")))
    return rows
