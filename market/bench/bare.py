"""The engine against the machine: a bare compiled loop of the same market as the yardstick, and
the engine's step split by phase.

The bare loop (:func:`bare_step`) is a reference for the bench, not a
second engine: it plays averaging against averaging only, by the very rule
the engine runs (:class:`strategies.averaging.Averaging`'s ``target``, the
template's accept rule and action, the game's :func:`~market.game.moves.outcome`),
pairs and opens with the market's own :func:`~market.sim.exchange.pair` and
:func:`~market.sim.exchange.openers`, and settles each deal by marking both
traders and adding its surplus; it keeps each negotiation in registers and
records nothing else. What the engine does beyond it (every strategy through
one dispatch, the batch record of every move, the settlement's books, the
learners, the model's Python around the compiled call, the collector) is
the gap the ratio measures.

Markets: averaging traders on both sides, drawn values, P = T = 5, periods of
10 steps (the model's default); each timed over whole periods, the engine
(``MarketModel.step``) and the bare loop alternately, after a warm-up
period, at 5,000 + 5,000 and 500,000 + 500,000 traders (50,000 + 50,000
with ``--quick``). Without ``--quick``, first, the largest market the project accepts:
``run.py market`` with 5,000,000 + 5,000,000 averaging traders for 10 steps, every output
file written, in a child process (its wall time, set-up included, and its peak memory).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from market.bench import BenchRow, at_most, spread
from market.compiled.jit import njit
from market.game.moves import GOES_ON, OPEN_RANDOM, bilateral_view, mover, offered, outcome
from market.game.rules import SELLER, Turn
from market.sim import exchange
from strategies.averaging import Averaging
from strategies.rule_based import accepts, action

TITLE = "engine vs a bare compiled loop of the same market (averaging, P=T=5)"
PERIOD = 10
_target = njit(cache=True, inline="always")(Averaging.target)


@njit(cache=True)
def bare_step(P: int, T: int, levels: tuple, traded: tuple, gain: tuple,  # noqa: PLR0913
              rng: np.random.Generator) -> int:
    """One market step: pair the traders still holding their unit, each pair bargains to its
    end (averaging both sides), deals mark both traders and add their gains (in levels).
    ``levels``: ``(s_lo, s_hi, b_lo, b_hi)``; ``traded``, ``gain``: per side. Returns the
    step's deals."""
    s_lo, s_hi, b_lo, b_hi = levels
    traded_s, traded_b = traded
    gain_s, gain_b = gain
    ps, pb = exchange.pair(traded_s, traded_b, rng)
    first = exchange.openers(ps.size, OPEN_RANDOM, rng)
    deals = 0
    for i in range(ps.size):
        s, b = ps[i], pb[i]
        last_s = last_b = prev_s = prev_b = 0
        for move in range(2 * T):
            side = mover(move, first[i])
            if side == SELLER:
                best, low, high, quiet = bilateral_view(last_s, move)
                turn = Turn(side, move, P, T, last_b, last_s, prev_b, s_lo[s], s_hi[s], 0.0,
                            best, low, high, quiet)
            else:
                best, low, high, quiet = bilateral_view(last_b, move)
                turn = Turn(side, move, P, T, last_s, last_b, prev_s, b_lo[b], b_hi[b], 0.0,
                            best, low, high, quiet)
            t = _target(turn, rng)
            a = action(turn, t, accepts(turn, t))
            end = outcome(a, P, turn.offer)
            if end == GOES_ON:
                if side == SELLER:
                    prev_s, last_s = last_s, offered(a)
                else:
                    prev_b, last_b = last_b, offered(a)
                continue
            if end > 0:
                traded_s[s] = traded_b[b] = True
                gain_s[s] += end - s_lo[s]
                gain_b[b] += b_hi[b] - end
                deals += 1
            break
    return deals


def _markets(traders: int) -> tuple:
    """The engine's market and the bare loop's arrays, from one model's draws."""
    from market.sim.model import MarketModel

    half = traders // 2
    m = MarketModel(n_buyers=half, n_sellers=half, seller_mix={"averaging": 1.0},
                    buyer_mix={"averaging": 1.0}, prices=5, rounds=5, period=PERIOD, seed=0)
    (s_lo, b_lo), (s_hi, b_hi) = m.market.levels
    levels = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (s_lo, s_hi, b_lo, b_hi))
    bare = (levels, (np.zeros(half, np.bool_), np.zeros(half, np.bool_)),
            (np.zeros(half), np.zeros(half)), np.random.default_rng(0))
    return m, bare


def _bare_period(bare: tuple) -> int:
    levels, traded, gain, rng = bare
    for t in traded:
        t[:] = False
    return sum(bare_step(5, 5, levels, traded, gain, rng) for _ in range(PERIOD))


def _model_period(m) -> int:  # noqa: ANN001
    n = 0
    for _ in range(PERIOD):
        m.step()
        n += len(m.last_step)
    return n


def _phases(m) -> dict[str, float]:  # noqa: ANN001
    """The first step of a period (every trader paired), by phase, in seconds: the compiled
    pieces called alone on copies of the market's arrays, the whole compiled step, and the
    model's Python around it (books, traces, the collector)."""
    from market.sim import engine as engines

    for _ in range(PERIOD - m.step_in_period):  # to a period's end: the next step opens one
        m.step()
    mk = m.market
    S, B = mk.books
    rng = np.random.default_rng(1)
    out = {}
    free_s, free_b = np.zeros(len(S), np.bool_), np.zeros(len(B), np.bool_)
    t0 = time.perf_counter()
    ps, pb = exchange.pair(free_s, free_b, rng)
    first = exchange.openers(ps.size, OPEN_RANDOM, rng)
    out["pairing"] = time.perf_counter() - t0
    module = m.engine.module
    (s_lo, b_lo), (s_hi, b_hi) = mk.levels
    seats = [(np.ascontiguousarray(book.strategy[idx]), np.ascontiguousarray(book.member[idx]),
              np.ascontiguousarray(lo[idx]), np.ascontiguousarray(hi[idx]))
             for book, idx, lo, hi in ((S, ps, s_lo, s_hi), (B, pb, b_lo, b_hi))]
    t0 = time.perf_counter()
    _, level, n_moves, _, _ = module.negotiate_rows(
        (5, 5), first, seats[0], seats[1], np.full(ps.size, -1, np.int64),
        np.zeros(ps.size, np.int64), m.engine.kinds,
        m.engine.n_groups_s, m.engine.store.arrays, rng, mk.protocol.pressure)
    out["negotiations"] = time.perf_counter() - t0
    copies = [tuple(a.copy() for a in book.ledger_arrays) for book in (S, B)]
    for c in copies:
        c[4][:] = False
    t0 = time.perf_counter()
    exchange.settle_deals(ps, pb, level, n_moves, (mk.grid.lo, mk.grid.step, mk.span),
                          mk.protocol.pressure, copies[0], copies[1])
    out["settlement"] = time.perf_counter() - t0
    for book in mk.books:  # every trader holds its unit, as when a period opens
        book.traded[:] = False
    t0 = time.perf_counter()
    engines.CompiledEngine.step(m.engine, mk, 0, m.rng)
    out["the compiled step"] = time.perf_counter() - t0
    for book in mk.books:  # undo that step: the model's own step opens the period again
        book.traded[:] = False
    t0 = time.perf_counter()
    m.step()
    out["the model's step"] = time.perf_counter() - t0
    out["recording and collector"] = out["the model's step"] - out["the compiled step"]
    return out


def _ten_million() -> BenchRow:
    """``run.py market`` with 5,000,000 + 5,000,000 averaging traders, 10 steps, every output
    file written, in a child process: its wall time and peak resident memory."""
    import resource
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="ten-million-") as folder:
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(Path(__file__).parents[2] / "run.py"), "market", "--buyers",
             "5000000", "--sellers", "5000000", "--steps", "10", "--out", folder],
            capture_output=True, text=True)
        seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"the ten-million market failed: {done.stderr.strip()[-300:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    return BenchRow("bare", "5,000,000 + 5,000,000 averaging traders, 10 steps and every "
                    "output file (run.py market)", seconds, "s", target=at_most(300, "< 5 min"),
                    note=f"peak memory of the largest child so far {peak:.1f} GiB (< 16 GiB); "
                         "set-up included")


def run(repeats: int = 5, quick: bool = False) -> list[BenchRow]:
    rows: list[BenchRow] = [] if quick else [_ten_million()]
    for traders, bound in ((10_000, 3.0), (100_000 if quick else 1_000_000, 1.5)):
        m, bare = _markets(traders)
        _model_period(m)
        _bare_period(bare)  # warm-up: compiles the bare loop, the engine's first period
        engine, loop, negs = [], [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            negs.append(_model_period(m))
            engine.append((time.perf_counter() - t0) / PERIOD)
            t0 = time.perf_counter()
            _bare_period(bare)
            loop.append((time.perf_counter() - t0) / PERIOD)
        label = f"{traders // 2:,} + {traders // 2:,} averaging traders"
        e, b = statistics.median(engine), statistics.median(loop)
        ratios = [x / y for x, y in zip(engine, loop, strict=True)]
        rows += [
            BenchRow("bare", f"engine step, {label}", e * 1e3, "ms",
                     spread=tuple(x * 1e3 for x in spread(engine)),
                     note=f"MarketModel.step, median of {repeats} periods of {PERIOD} steps; "
                          f"{statistics.median(negs) / PERIOD / e:,.0f} negotiations/s"),
            BenchRow("bare", f"bare loop step, {label}", b * 1e3, "ms",
                     spread=tuple(x * 1e3 for x in spread(loop)),
                     note="the same rules, nothing recorded; timed alternately"),
            BenchRow("bare", f"engine / bare loop, {label}", statistics.median(ratios), "x",
                     spread=spread(ratios), target=at_most(bound, f"<= {bound:g}x")),
        ]
        _phases(m)  # the pieces called alone load (or compile) on their first call
        runs = [_phases(m) for _ in range(repeats)]
        phases = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        total = phases["the model's step"]
        rows.append(BenchRow(
            "bare", f"a period's first step by phase, {label}", total * 1e3, "ms",
            note="; ".join(f"{k} {v * 1e3:,.2f} ms" for k, v in phases.items()
                           if k != "the model's step")
                 + f"; learning: none (no learner); medians of {repeats}"))
    return rows
