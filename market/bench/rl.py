"""Environment speed for reinforcement learning: steps per second of the Gymnasium environments.

Each figure is environment steps per CPU second of this process, a random
agent against ``boulware`` (any built-in strategy runs compiled), P = T = 5,
episodes reset as they end:

- the single environment's fast path (one compiled row,
  :mod:`market.game.fastgame`), against the same environment played move
  by move through the protocol (:class:`~market.interop.episode.Episode`,
  the path every opponent without a compiled decision takes), timed in the
  same run, repeat by repeat;
- the vector environment (:class:`~market.interop.vector_env.BargainingVectorEnv`)
  with 1,024 rows, steps counted over all rows.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from market.bench import BenchRow, at_least

TITLE = "reinforcement-learning environments (random agent vs boulware, P=T=5)"


def _single(fast: bool, seconds: float) -> float:
    from market.interop.gymnasium_env import BargainingEnv

    env = BargainingEnv(side="seller", opponent="boulware")
    if not fast:
        env._row = None  # the move-by-move path
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 7, 100_000).tolist()
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < seconds:
        for a in actions[n % 90_000: n % 90_000 + 1_000]:
            if env.step(a)[2]:
                env.reset()
        n += 1_000
    return n / (time.process_time() - t0)


def _vector(num_envs: int, seconds: float) -> float:
    from market.interop.vector_env import BargainingVectorEnv

    env = BargainingVectorEnv(num_envs, side="seller", opponent="boulware")
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 7, (64, num_envs))
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < seconds:
        for a in actions:
            env.step(a)
        n += len(actions) * num_envs
    return n / (time.process_time() - t0)


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    seconds = 0.2 if quick else 1.0
    _single(True, 0.05), _single(False, 0.05), _vector(1024, 0.05)  # compile, warm
    fast, slow, ratio, vec = [], [], [], []
    for _ in range(repeats):
        f, s = _single(True, seconds), _single(False, seconds)
        fast.append(f)
        slow.append(s)
        ratio.append(f / s)
        vec.append(_vector(1024, seconds))
    med = statistics.median
    return [
        BenchRow("rl", "single environment, compiled opponent", med(fast), "steps/s",
                 target=at_least(20_000, ">= 20,000"),
                 note=f"{min(fast):,.0f}-{max(fast):,.0f} per CPU second"),
        BenchRow("rl", "single environment, move by move (reference)", med(slow), "steps/s",
                 note=f"{min(slow):,.0f}-{max(slow):,.0f}; the path of opponents without a "
                      "compiled decision"),
        BenchRow("rl", "speed-up of the compiled single environment", med(ratio), "x",
                 note=f"{min(ratio):.1f}-{max(ratio):.1f}"),
        BenchRow("rl", "vector environment, 1,024 rows", med(vec), "steps/s",
                 target=at_least(1_000_000, ">= 1,000,000"),
                 note=f"{min(vec):,.0f}-{max(vec):,.0f} per CPU second, all rows counted"),
    ]
