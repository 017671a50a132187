"""Market throughput: the compiled engine against the lockstep path, and its memory.

The market under test is the issue's: half Sellers, half Buyers, each side
averaging and Q-learning half and half, P = 5, T = 5. Timing covers whole
trading periods of 10 steps (the model's default): the first step of a
period pairs every trader, later ones only those still holding their unit,
and the period's end records the agent table; negotiations are counted as
they happen.

The reference, timed in the same run on the same markets, is the lockstep
path (``MarketModel(engine="lockstep")``: each strategy's Python ``act``,
one numpy call per strategy group and move), which gives the same tables
bit for bit. Peak memory is the resident set of a fresh interpreter that
builds the largest market and runs two 10-step periods with agent data
collected at each period's end (``VmHWM`` of /proc/self/status: the
peak resident set of that process image; ``ru_maxrss`` would inherit the
parent's peak across fork), next to its footprint after the imports alone.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from market.bench import BenchRow, at_least, at_most, fresh_interpreter, spread

TITLE = "market: compiled engine vs lockstep path (averaging + Q-learning, P=5 T=5)"
MIX = {"averaging": 0.5, "qlearning": 0.5}
PERIOD = 10
#: the largest market's mix (see :func:`run`)
BIG_MIX = {"averaging": 1.0}


def _model(traders: int, engine: str = "compiled", period: int = PERIOD, seed: int = 0):
    from market.sim.model import MarketModel

    half = traders // 2
    return MarketModel(n_buyers=half, n_sellers=half, buyer_mix=MIX, seller_mix=MIX,
                       prices=5, rounds=5, period=period, seed=seed, engine=engine)


def _periods(traders: int, repeats: int, engine: str = "compiled"
             ) -> tuple[list[float], list[int]]:
    """Seconds per step and negotiations of each repeat; a repeat is one whole period.

    Two periods are run first as a warm-up (the learners' first exploration,
    allocations, and what a process loads once: the first period's opening
    loads a compiled helper from numba's cache, about 5 ms, once per process).
    Timing whole periods keeps every kind of step in the figure: the busy
    first step, the thinning later ones, and the agent records taken at the
    period's end.
    """
    model = _model(traders, engine)
    for _ in range(2 * PERIOD):
        model.step()
    per_step, negotiations = [], []
    for _ in range(repeats):
        n = 0
        t0 = time.perf_counter()
        for _ in range(PERIOD):
            model.step()
            n += len(model.last_step)
        per_step.append((time.perf_counter() - t0) / PERIOD)
        negotiations.append(n)
    return per_step, negotiations


def _run_periods(traders: int, repeats: int) -> list[float]:
    """Seconds per step of each repeat, one period through ``model.run`` (the path of batch
    runs, ``run_model`` and the market command: a period's steps in one compiled call)."""
    model = _model(traders)
    model.run(PERIOD)
    per_step = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.run(PERIOD)
        per_step.append((time.perf_counter() - t0) / PERIOD)
    return per_step


_MEMORY_CODE = """
import json


def hwm_kib():  # peak resident set of this process image (reset at exec, unlike ru_maxrss)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


import market.sim.model, pandas, pyarrow  # noqa: E401,F401
base = hwm_kib()
from market.sim.model import MarketModel
half = {traders} // 2
mix = {mix}
m = MarketModel(n_buyers=half, n_sellers=half, buyer_mix=mix, seller_mix=mix, period=10, seed=0,
                **{extra})
import time
steps = []
for _ in range(20):
    t0 = time.perf_counter()
    m.step()
    steps.append(time.perf_counter() - t0)
frames = (m.datacollector.get_model_vars_dataframe(), m.datacollector.agent_frame())
steps.sort()
print(json.dumps({{"base_kib": base, "peak_kib": hwm_kib(), "agent_rows": len(frames[1]),
                  "step_s": steps[len(steps[1:]) // 2 + 1]}}))
"""


def memory(traders: int, mix: dict[str, float] | None = None, **extra: object
           ) -> dict[str, float]:
    """A fresh process's peak resident set (KiB) running 20 steps of a market of ``traders``
    (half a side) playing ``mix`` (``extra``: more of the model's keywords), its footprint
    after the imports alone, its agent rows and its median step (seconds)."""
    code = _MEMORY_CODE.format(traders=traders, mix=repr(mix or MIX), extra=repr(extra))
    out = subprocess.run([sys.executable, "-c", code],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


#: a small market's step (the size most users sweep): the target of the model's own overhead
SMALL_STEP_MS = 0.04


def _ratio_rows(traders: int, repeats: int) -> tuple[list[BenchRow], float, float]:
    """Step time on both paths at one size; the compiled rate and the ratio."""
    fast, negs = _periods(traders, repeats)
    slow, _ = _periods(traders, max(repeats // 2, 1), "lockstep")
    f, s = statistics.median(fast), statistics.median(slow)
    rate = statistics.median(n / (t * PERIOD) for n, t in zip(negs, fast, strict=True))
    label = f"{traders // 2:,} + {traders // 2:,} traders"
    rows = [
        BenchRow("market", f"time per step, {label}, compiled", f * 1e3, "ms",
                 target=at_most(SMALL_STEP_MS, f"<= {SMALL_STEP_MS} ms") if traders <= 100
                 else None,
                 note=f"median of {repeats} periods of {PERIOD} steps; "
                      f"{min(fast) * 1e3:,.3f}-{max(fast) * 1e3:,.3f} ms"),
        BenchRow("market", f"time per step, {label}, lockstep (reference)", s * 1e3, "ms",
                 note=f"{min(slow) * 1e3:,.2f}-{max(slow) * 1e3:,.2f} ms"),
    ]
    if traders <= 100:
        run = _run_periods(traders, repeats)
        rows.insert(1, BenchRow(
            "market", f"time per step, {label}, compiled, through model.run",
            statistics.median(run) * 1e3, "ms",
            target=at_most(SMALL_STEP_MS, f"<= {SMALL_STEP_MS} ms"),
            note=f"median of {repeats} periods of {PERIOD} steps, a period a call; "
                 f"{min(run) * 1e3:,.3f}-{max(run) * 1e3:,.3f} ms"))
    return rows, rate, s / f


#: a user's rule, written outside the package: the averaging rule under another name, so
#: that the market with it plays exactly the negotiations of the market with the built-in
USER_RULE = """
from market.game.rules import SELLER
from strategies.rule_based import RuleBased, bounds


class MyAveraging(RuleBased):
    name = "my-averaging"

    @staticmethod
    def target(turn, rng):
        lo, hi = bounds(turn)
        extreme = hi if turn.side == SELLER else lo
        base = turn.own if turn.own > 0 else extreme
        mid = (base + turn.offer) // 2 if turn.offer > 0 else extreme
        return min(max(mid, lo), hi)
"""


def _user_rows(traders: int, repeats: int, folder: str) -> list[BenchRow]:
    """A user's rule from a file outside the package against the built-in it copies, in
    the same mixed market (Q-learners on both sides), timed alternately."""
    from pathlib import Path

    from market.sim.model import MarketModel

    path = Path(folder) / "my_rules.py"
    path.write_text(USER_RULE)
    half = traders // 2

    def model(spec: str) -> MarketModel:
        return MarketModel(n_buyers=half, n_sellers=half, seller_mix={spec: 0.5, "qlearning": 0.5},
                           buyer_mix=MIX, prices=5, rounds=5, period=PERIOD, seed=0)

    models = {"user": model(f"{path}:MyAveraging"), "built-in": model("averaging")}
    times: dict[str, list[float]] = {"user": [], "built-in": []}
    for _ in range(repeats + 1):  # the first period warms both up
        for key, m in models.items():
            t0 = time.perf_counter()
            for _ in range(PERIOD):
                m.step()
            times[key].append((time.perf_counter() - t0) / PERIOD)
    frames = [models[k].datacollector.get_model_vars_dataframe()  # columns name strategies
              for k in ("user", "built-in")]
    same = frames[0].shape == frames[1].shape and frames[0].set_axis(
        frames[1].columns, axis=1).equals(frames[1])  # equals: NaN (no deal yet) equals NaN
    u, b = (statistics.median(times[k][1:]) for k in ("user", "built-in"))
    label = f"{half:,} + {half:,} traders"
    spread = (f"user {min(times['user'][1:]) * 1e3:,.3f}-{max(times['user'][1:]) * 1e3:,.3f} ms,"
              f" built-in {min(times['built-in'][1:]) * 1e3:,.3f}-"
              f"{max(times['built-in'][1:]) * 1e3:,.3f} ms")
    return [
        BenchRow("market", f"time per step, {label}, a user's rule from a file", u * 1e3, "ms",
                 note=f"median of {repeats} periods; {spread}"),
        BenchRow("market", f"user's rule / built-in in its place, {label}", u / b, "x",
                 target=at_most(1.25, "<= 1.25x"),
                 note="the same market with averaging in its place, timed alternately"
                      + ("; identical tables" if same else "; TABLES DIFFER")),
    ]


#: what a fresh interpreter runs to time the engine's compile (or its load), with the
#: generated modules in the folder ``$NEGOTIATION_MARKET_CACHE``; ``rule``: a user's file
_COMPILE_PROBE = """
import json, time
from market.sim import engine
from strategies import specs

rule = {rule!r}
strategies = [specs.parse(rule).cls()] if rule else []
heard = []
t0 = time.perf_counter()
engine.compiled_module(strategies, lambda: heard.append(1))
print(json.dumps({{"ready": time.perf_counter() - t0, "compiled": bool(heard)}}))
"""


def _compile_probe(cache: str | None, rule: str = "") -> dict[str, float]:
    """Time :func:`market.sim.engine.compiled_module` in a fresh interpreter (``cache``:
    the generated modules' folder; None: this machine's)."""
    return fresh_interpreter(_COMPILE_PROBE.format(rule=rule),
                             {"NEGOTIATION_MARKET_CACHE": cache} if cache else None)


def _compile_rows(cold_repeats: int, repeats: int, quick: bool, folder: str) -> list[BenchRow]:
    """The engine's compile: the built-in strategies in an empty cache folder; then a user's
    rule never seen before (a file of a fresh content each time) on top of them; then that
    rule's engine loaded again. ``quick``: on this machine's cache, no cold compile."""
    import tempfile
    from pathlib import Path

    cold, new, warm, said = [], [], [], []
    for c in range(1 if quick else cold_repeats):
        with tempfile.TemporaryDirectory(prefix="engine-cache-") as cache:
            where = None if quick else cache
            if not quick:
                first = _compile_probe(where)
                cold.append(first["ready"])
                said.append(first["compiled"])
            for k in range(1 if quick else max(1, repeats // cold_repeats)):
                path = Path(folder) / f"probe_{os.getpid()}_{time.time_ns()}_{c}_{k}.py"
                path.write_text(USER_RULE + f"\n# a new file: {path.name}\n")
                spec = f"{path}:MyAveraging"
                first = _compile_probe(where, spec)
                new.append(first["ready"])
                again = _compile_probe(where, spec)
                warm.append(again["ready"])
                said += [first["compiled"], not again["compiled"]]
    notice = "fired" if all(said) else "did NOT fire as expected"
    rows = []
    if cold:
        rows.append(BenchRow("market", "engine compile, built-in strategies, empty cache",
                             statistics.median(cold), "s", target=at_most(20, "<= 20 s"),
                             spread=spread(cold),
                             note=f"once per build; an empty cache folder, the package's "
                                  f"helpers too; the compile notice {notice}"))
    rows += [
        BenchRow("market", "engine compile with a new user's rule, built-ins cached",
                 statistics.median(new), "s", target=at_most(5, "<= 5 s"), spread=spread(new),
                 note="its own module, then the engine's loops around every rule"
                      + ("; --quick: this machine's cache" if quick else "")),
        BenchRow("market", "engine load with that rule, every later run",
                 statistics.median(warm), "s", target=at_most(2, "<= 2 s"), spread=spread(warm),
                 note="from the generated module's numba cache"),
    ]
    return rows


def run(repeats: int, quick: bool) -> list[BenchRow]:
    small, rated = 100, (2_000 if quick else 10_000)
    big = 100_000 if quick else 1_000_000
    rows, _, ratio = _ratio_rows(small, repeats)
    rows.append(BenchRow("market", "speed-up over lockstep, 50 + 50 traders", ratio, "x",
                         target=at_least(50, ">= 50x")))
    more, rate, ratio = _ratio_rows(rated, repeats)
    rows += more
    label = f"{rated // 2:,} + {rated // 2:,} traders"
    rows.append(BenchRow("market", f"speed-up over lockstep, {label}", ratio, "x",
                         target=None if quick else at_least(20, ">= 20x")))
    rows.append(BenchRow("market", f"negotiations/s, {label}, compiled", rate,
                         "negotiations/s",
                         target=None if quick else at_least(5_000_000, ">= 5,000,000")))
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for traders in (small, 10_000):
            rows += _user_rows(traders, repeats, folder)
        rows += _compile_rows(max(1, min(repeats, 2)), repeats, quick, folder)
    # half a million learners would hold 189 M Q-table cells, over the market's cap: the
    # largest market is averaging traders alone
    mems = [memory(big, BIG_MIX) for _ in range(1 if quick else min(repeats, 2))]
    peak = statistics.median(m["peak_kib"] for m in mems) / 1024
    base = statistics.median(m["base_kib"] for m in mems) / 1024
    step = statistics.median(m["step_s"] for m in mems)
    label = f"{big // 2:,} + {big // 2:,} averaging traders"
    rows.append(BenchRow("market", f"time per step, {label}, compiled", step * 1e3, "ms",
                         target=None if quick else at_most(100, "< 100 ms"),
                         note="median of 19 steps after the first, in a fresh process"))
    rows.append(BenchRow("market", f"peak memory, {label}", peak, "MiB",
                         target=None if quick else at_most(1536, "< 1.5 GiB"),
                         note=f"peak RSS (VmHWM) of a fresh process; {base:.0f} MiB after "
                              f"imports alone; 20 steps, agent table "
                              f"{mems[0]['agent_rows']:,} rows"))
    return rows
