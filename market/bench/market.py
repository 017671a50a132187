"""Market throughput: negotiations per second, time per step against size, peak memory.

The market under test is the issue's: half Sellers, half Buyers, each side
averaging and Q-learning half and half, P = 5, T = 5. Timing covers whole
trading periods of 10 steps (the model's default): the first step of a
period pairs every trader, later ones only those still holding their unit,
and the period's end records the agent table; negotiations are counted as
they happen.

References timed in the same run: the same negotiations one pair per
``negotiate`` call (what a per-agent Python loop over the same protocol
would cost at best), and the 1,000-trader step for the scaling ratio.
Peak memory is the resident set of a fresh interpreter that builds the
100,000-trader model and runs two 10-step periods with agent data
collected at each period's end (``VmHWM`` of /proc/self/status: the
peak resident set of that process image; ``ru_maxrss`` would inherit the
parent's peak across fork), next to its footprint after the imports alone.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import numpy as np

from market.bench import BenchRow, at_least, at_most

TITLE = "market throughput (averaging + Q-learning, P=5 T=5)"
MIX = {"averaging": 0.5, "qlearning": 0.5}
PERIOD = 10


def _model(traders: int, period: int = PERIOD, seed: int = 0):
    from market.sim.model import MarketModel

    half = traders // 2
    return MarketModel(n_buyers=half, n_sellers=half, buyer_mix=MIX, seller_mix=MIX,
                       prices=5, rounds=5, period=period, seed=seed)


def _periods(traders: int, repeats: int) -> tuple[list[float], list[int]]:
    """Seconds per step and negotiations of each repeat; a repeat is one whole period.

    One period is run first as a warm-up (the learners' first exploration,
    allocations). Timing whole periods keeps every kind of step in the
    figure: the busy first step, the thinning later ones, and the agent
    records taken at the period's end.
    """
    model = _model(traders)
    for _ in range(PERIOD):
        model.step()
    per_step, negotiations = [], []
    for _ in range(repeats):
        n = 0
        t0 = time.perf_counter()
        for _ in range(PERIOD):
            model.step()
            n += model.last_pairs
        per_step.append((time.perf_counter() - t0) / PERIOD)
        negotiations.append(n)
    return per_step, negotiations


def _reference_rate(pairs: int, seed: int = 0) -> float:
    """Negotiations per second when each pair is its own ``negotiate`` call (same strategies)."""
    import strategies
    from market.game.protocol import Side, negotiate
    from market.game.rules import Protocol

    proto = Protocol(5, 5)
    rng = np.random.default_rng(seed)
    sell = [strategies.make("averaging", 0, 1, proto)]
    buy = [strategies.make("averaging", 1, 1, proto)]
    lo = rng.integers(1, 6, pairs)
    hi = rng.integers(1, 6, pairs)
    t0 = time.perf_counter()
    for i in range(pairs):
        negotiate(proto, Side.single(sell[0], 1, int(lo[i]), 5),
                  Side.single(buy[0], 1, 1, int(hi[i])), i % 2, rng)
    return pairs / (time.perf_counter() - t0)


_MEMORY_CODE = """
import json


def hwm_kib():  # peak resident set of this process image (reset at exec, unlike ru_maxrss)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


import market.sim.model, pandas, pyarrow  # noqa: E401,F401
base = hwm_kib()
from market.sim.model import MarketModel
half = {traders} // 2
mix = {{"averaging": 0.5, "qlearning": 0.5}}
m = MarketModel(n_buyers=half, n_sellers=half, buyer_mix=mix, seller_mix=mix, period=10, seed=0)
for _ in range(20):
    m.step()
frames = (m.model_frame(), m.agent_frame())
print(json.dumps({{"base_kib": base, "peak_kib": hwm_kib(), "agent_rows": len(frames[1])}}))
"""


def _memory(traders: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _MEMORY_CODE.format(traders=traders)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(repeats: int, quick: bool) -> list[BenchRow]:
    rate_traders = 2_000 if quick else 10_000
    sizes = [500, 5_000] if quick else [1_000, 10_000, 100_000]
    mem_traders = 5_000 if quick else 100_000

    per_step, negs = _periods(rate_traders, repeats)
    rates = [n / (t * PERIOD) for n, t in zip(negs, per_step, strict=True)]
    rate = statistics.median(rates)
    ref_pairs = 500 if quick else 2_000
    ref = statistics.median(_reference_rate(ref_pairs, seed=i) for i in range(repeats))
    rows = [
        BenchRow("market", f"negotiations/s, {rate_traders:,} traders", rate, "negotiations/s",
                 target=at_least(100_000, ">= 100,000"),
                 note=f"{statistics.median(negs) / PERIOD:,.0f} pairs a step on average over a "
                      f"{PERIOD}-step period, all included; {min(rates):,.0f}-{max(rates):,.0f}"),
        BenchRow("market", "reference: one negotiate() call per pair", ref, "negotiations/s",
                 note="averaging vs averaging, same protocol code"),
        BenchRow("market", "speed-up over the per-pair reference", rate / ref, "x"),
    ]
    step_t: dict[int, float] = {}
    for n in sizes:
        times, _ = _periods(n, repeats)
        step_t[n] = statistics.median(times)
        rows.append(BenchRow("market", f"time per step, {n:,} traders", step_t[n] * 1e3, "ms",
                             note=f"median of {repeats} periods of {PERIOD} steps; "
                                  f"{min(times) * 1e3:,.1f}-{max(times) * 1e3:,.1f} ms"))
    lo, hi = sizes[0], sizes[-1]
    ratio = step_t[hi] / step_t[lo]
    rows.append(BenchRow("market", f"step time ratio {hi:,} / {lo:,} traders", ratio, "x",
                         target=at_most(hi // lo, f"<= {hi // lo} (linear)"),
                         note=f"per-trader cost ratio {ratio * lo / hi:.2f}"))
    mems = [_memory(mem_traders) for _ in range(min(repeats, 3))]
    peak = statistics.median(m["peak_kib"] for m in mems) / 1024
    base = statistics.median(m["base_kib"] for m in mems) / 1024
    rows.append(BenchRow("market", f"peak memory, {mem_traders:,} traders", peak, "MiB",
                         target=at_most(1024, "< 1024 MiB"),
                         note=f"peak RSS (VmHWM) of a fresh process; {base:.0f} MiB after "
                              f"imports alone; 20 steps, agent table "
                              f"{mems[0]['agent_rows']:,} rows"))
    return rows
