"""Training throughput: the compiled trainer next to a plain pure-Python one, timed in one run.

The reference below is the document's algorithm written the way the
document writes it: lists of lists for the Q-tables, one episode at a time,
one move at a time, the trainee updating online after each trainer reply,
the trainer greedy on a frozen snapshot, roles swapping every cycle with the
document's snapshot rule and the first mover alternating every episode. It
plays under the protocol as specified (legal actions only), like the
compiled trainer, so both do the same work per episode. It is the yardstick
only: training itself runs in :mod:`market.game.train_kernel`.

Rows: the reference; one seed of the default preset (the speed a person
waits for); many seeds of the document's preset over all cores (episodes
summed over seeds) and its ratio to the reference; the training time of
``train --seeds 20`` (default preset, as the command runs it); the
kernel's compile time on a cold numba cache (a fresh interpreter with
``NEGOTIATION_MARKET_CACHE`` pointing at an empty folder) and its load time on a
warm one (the same folder again). ``--quick`` skips the cold compile and
``train --seeds 20``.
"""

from __future__ import annotations

import copy
import math
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from market.bench import BenchRow, at_least, at_most, fresh_interpreter, median_time, spread

TITLE = "training throughput (the document's trainer, P=5 T=5)"


def reference_train(
    cycles: int = 50,
    episodes: int = 100,
    prices: int = 5,
    rounds: int = 5,
    seed: int = 0,
    train_both: bool = True,
    trainee_first: int = 0,
    lr: float = 0.1,
    gamma: float = 0.99,
) -> tuple[list[list[float]], list[list[float]]]:
    """The document's trainer in plain Python; returns the (Seller, Buyer) tables."""
    rnd = random.Random(seed)
    P, T = prices, rounds
    S, A = P * T + 2, P + 2
    accept, d = P, S - 1
    q = [[[0.0] * A for _ in range(S)] for _ in range(2)]

    def legal(state: int) -> range:
        if state == 0:
            return range(P)  # must offer
        if state > (T - 1) * P:
            return range(P, P + 2)  # last round: accept or reject
        return range(A)

    def greedy(table: list[list[float]], state: int) -> int:
        best, acts = -math.inf, []
        row = table[state]
        for a in legal(state):
            v = row[a]
            if v > best:
                best, acts = v, [a]
            elif v == best:
                acts.append(a)
        return rnd.choice(acts)

    trainee, trainer = trainee_first, 1 - trainee_first
    trainee_snap, trainer_snap = copy.deepcopy(q[trainee]), copy.deepcopy(q[trainer])
    for _cycle in range(cycles):
        table = q[trainee]
        for e in range(episodes):
            eps = 0.1 + 0.9 * math.exp(-0.001 * e)
            offer, m = 0, 0  # last offer on the table, move index
            s = a = -1  # trainee's pending (state, action)
            if e % 2 == 0:  # trainer first
                offer, m = greedy(trainer_snap, 0) + 1, 1
            while True:
                state = 0 if m == 0 else 1 + ((m - 1) // 2) * P + offer - 1
                if s >= 0:  # trainer replied with an offer: update towards the new state
                    nxt = max(table[state][x] for x in legal(state))
                    table[s][a] = (1 - lr) * table[s][a] + lr * gamma * nxt
                a = rnd.choice(legal(state)) if rnd.random() < eps else greedy(table, state)
                s = state
                if a >= accept:  # trainee ends the negotiation
                    deal = offer if a == accept else 0
                    break
                offer, m = a + 1, m + 1
                reply_state = 1 + ((m - 1) // 2) * P + offer - 1
                b = greedy(trainer_snap, reply_state)
                if b >= accept:
                    deal = offer if b == accept else 0
                    break
                offer, m = b + 1, m + 1
            reward = 0.0
            if deal:
                reward = deal / P if trainee == 0 else 1.0 - deal / P
            table[s][a] = (1 - lr) * table[s][a] + lr * (reward + gamma * max(q[trainee][d]))
        if train_both:
            new_trainee_snap = copy.deepcopy(q[trainer])
            trainer_snap, trainee_snap = trainee_snap, new_trainee_snap
            trainee, trainer = trainer, trainee
    return q[0], q[1]


#: what a fresh interpreter runs to time the kernel's compile (or its load from the cache)
_COMPILE_PROBE = """
import json, time
t0 = time.perf_counter()
from market.game import train_kernel
t1 = time.perf_counter()
heard = []
train_kernel.ensure_compiled(lambda: heard.append(time.perf_counter()))
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "ready": t2 - t1, "compiled": bool(heard)}))
"""


def compile_probe(cache_dir: str | None) -> dict[str, float]:
    """Time :func:`market.game.train_kernel.ensure_compiled` in a fresh interpreter.

    ``cache_dir``: the cache folder for that interpreter (``NEGOTIATION_MARKET_CACHE``);
    ``None``: this machine's.
    """
    return fresh_interpreter(_COMPILE_PROBE,
                             {"NEGOTIATION_MARKET_CACHE": cache_dir} if cache_dir else None)


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def run(repeats: int, quick: bool) -> list[BenchRow]:
    from market.game import train_kernel
    from market.game.training import preset, train

    train_kernel.ensure_compiled()  # compile outside the timings (its cost has its own rows)
    ref_cycles = 10 if quick else 50  # the document's 50 x 100 episodes
    seeds = 200 if quick else 2000  # each trains the document's 50 x 100 episodes
    ref_episodes = ref_cycles * 100
    many = preset("seed", seeds=seeds, test_episodes=0)
    one = preset("default", seeds=1, test_episodes=0)
    # the same run under a breakdown risk and costs per offer (issue: the kernel's speed)
    pressed = one.replace(breakdown=0.1, seller_cost=0.01, buyer_cost=0.02)
    twenty = preset("default", seeds=20)

    # Interleaved, so that load from other work on a shared machine hits the reference and
    # the compiled trainer alike; train() times its own training loop (no NashConv, no test).
    ref_rates, many_rates, one_rates, twenty_s, twenty_wall = [], [], [], [], []
    pressed_rates: list[float] = []
    for _ in range(repeats):
        ref_t = median_time(lambda: reference_train(cycles=ref_cycles), 1)[0]
        ref_rates.append(ref_episodes / ref_t)
        res = train(many, nash_conv=False, exact=False)
        many_rates.append(many.total_episodes * seeds / res.train_seconds)
        res = train(one, nash_conv=False, exact=False)
        one_rates.append(one.total_episodes / res.train_seconds)
        res = train(pressed, nash_conv=False, exact=False)
        pressed_rates.append(pressed.total_episodes / res.train_seconds)
        if not quick:  # as `run.py train --seeds 20` runs it: NashConv per cycle, exact test
            wall, times = median_time(lambda: twenty_s.append(train(twenty).train_seconds), 1)
            twenty_wall.append(wall)
    ratios = [m / r for m, r in zip(many_rates, ref_rates, strict=True)]
    threads = _threads()
    rows = [
        BenchRow("training", "reference: pure Python, 1 seed", _median(ref_rates), "episodes/s",
                 note=f"the document's trainer, {ref_episodes:,} episodes per run",
                 spread=spread(ref_rates)),
        BenchRow("training", "compiled, 1 seed, default preset", _median(one_rates),
                 "episodes/s", target=at_least(5_000_000, ">= 5,000,000"),
                 note=f"{one.total_episodes:,} episodes per run", spread=spread(one_rates)),
        BenchRow("training", "compiled, 1 seed, under a breakdown risk and costs",
                 _median(pressed_rates), "episodes/s", spread=spread(pressed_rates),
                 note="the same run with --breakdown 0.1 --seller-cost 0.01 --buyer-cost 0.02"),
        BenchRow("training", "breakdown risk and costs / without, 1 seed",
                 _median([p / o for p, o in zip(pressed_rates, one_rates, strict=True)]), "x",
                 target=at_least(0.8, ">= 0.8x"),
                 spread=spread([p / o for p, o in zip(pressed_rates, one_rates, strict=True)]),
                 note="episodes/s, timed alternately in the same run (a breakdown also "
                      "shortens episodes)"),
        BenchRow("training", f"compiled, {seeds:,} seeds of the document's preset",
                 _median(many_rates), "episodes/s", spread=spread(many_rates),
                 note=f"{many.total_episodes:,} episodes x {seeds:,} seeds, {threads} thread(s)"),
        BenchRow("training", "speed-up over the reference", _median(ratios), "x",
                 target=at_least(50, ">= 50x"), spread=spread(ratios),
                 note=f"{seeds:,} seeds on {threads} thread(s) vs pure Python, same run"),
    ]
    if twenty_s:
        rows.append(BenchRow(
            "training", "train --seeds 20, default preset: training time", _median(twenty_s),
            "s", target=at_most(2.0, "<= 2 s"), spread=spread(twenty_s),
            note=f"20 x {twenty.total_episodes:,} episodes; with NashConv per cycle and the "
                 f"test: {_median(twenty_wall):.2f} s"))
    rows.append(_estimate_row(quick))
    rows.append(_evaluate_estimate_row(quick))
    if quick:  # a smoke test: no cold compile (seconds); the load from this machine's cache
        warm = [compile_probe(None)["ready"] for _ in range(repeats)]
        rows.append(BenchRow("training", "kernel load, warm numba cache", _median(warm), "s",
                             target=at_most(2.0, "<= 2 s"), spread=spread(warm),
                             note="--quick: the cold compile is not timed"))
    else:
        rows.extend(_compile_rows(max(1, min(repeats, 2)), repeats))
    return rows


#: runs whose time the ``train`` command's estimate must get within a factor of two (the
#: default preset with these overrides): large tables, where the exact evaluation is most of
#: the run; long games; many seeds
ESTIMATED = (dict(prices=200, rounds=5, cycles=20), dict(prices=400, rounds=5, cycles=10),
             dict(prices=20, rounds=20, seeds=8, cycles=100), dict(seeds=400))


def _estimate_row(quick: bool) -> BenchRow:
    """The worst factor between ``train``'s time estimate and the command's measured run
    (training, NashConv after every cycle, the test and its exact expectation)."""
    from market.game.training import preset

    runs = []
    for over in ESTIMATED[:1] if quick else ESTIMATED:
        flags = [x for k, v in over.items() for x in (f"--{k}", str(v))]
        runs.append((["train", "--preset", "default", *flags],
                     preset("default", **over).estimated_seconds(), ""))
    return _against_estimate("train's", runs)


#: games whose ``evaluate --spe`` time the command's estimate must get within a factor of
#: two: square and long tables, small and large (where memory makes each cell dearer), and
#: the outcome sets under time pressure
EVALUATED = ((300, 20, {}), (1000, 12, {}), (50, 400, {}),
             (100, 70, {"seller_discount": 0.9, "buyer_discount": 0.9}),
             (700, 10, {"seller_cost": 0.01, "buyer_cost": 0.02}))


def _evaluate_estimate_row(quick: bool) -> BenchRow:
    """The worst factor between ``evaluate --spe``'s time estimate and the command's
    measured run."""
    from market.game import evaluation
    from market.game.rules import Protocol

    runs = []
    for prices, rounds, pressure in EVALUATED[:1] if quick else EVALUATED:
        flags = [x for k, v in pressure.items() for x in (f"--{k.replace('_', '-')}", str(v))]
        runs.append((["evaluate", "--spe", "--prices", str(prices), "--rounds", str(rounds),
                      *flags], evaluation.cost(Protocol(prices, rounds, **pressure))[1],
                     f"P={prices}, T={rounds}{' ' if flags else ''}{' '.join(flags)}: "))
    return _against_estimate("evaluate --spe's", runs)


def _against_estimate(whose: str, runs: list[tuple[list[str], float, str]]) -> BenchRow:
    """Each command (``run.py ARGS --json``, started in a fresh process as a user runs it)
    timed against its estimate; the row is the worst factor either way."""
    import time

    root = str(Path(__file__).resolve().parents[2])
    factors, said = [], []
    for args, est, label in runs:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "run.py", *args, "--json"], cwd=root,
                       capture_output=True, check=True, timeout=600)
        took = time.perf_counter() - t0
        factors.append(max(est / took, took / est))
        said.append(f"{label}{est:.1f} s for {took:.1f} s")
    return BenchRow("training", f"{whose} time estimate against the measured run, worst factor",
                    max(factors), "x", target=at_most(2.0, "<= 2x"), spread=spread(factors),
                    note="estimated for measured: " + "; ".join(said))


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _compile_rows(cold_repeats: int, warm_repeats: int) -> list[BenchRow]:
    """Cold compiles (each in a new empty cache folder) and warm loads (the same folder)."""
    cold, warm, imports, announced = [], [], [], []
    for _ in range(cold_repeats):
        with tempfile.TemporaryDirectory(prefix="kernel-cache-") as cache:
            first = compile_probe(cache)
            cold.append(first["ready"])
            announced.append(first["compiled"])
            for _ in range(max(1, warm_repeats // cold_repeats)):
                again = compile_probe(cache)
                warm.append(again["ready"])
                announced.append(not again["compiled"])
                imports.append(again["import"])
    said = "fired" if all(announced) else "did NOT fire as expected"
    return [
        BenchRow("training", "kernel compile, cold numba cache", _median(cold), "s",
                 spread=spread(cold), note=f"once per build; train's compile notice {said}"),
        BenchRow("training", "kernel load, warm numba cache", _median(warm), "s",
                 target=at_most(2.0, "<= 2 s"), spread=spread(warm),
                 note=f"every later run; plus {_median(imports):.2f} s importing numba"),
    ]
