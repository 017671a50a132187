"""The training kernel: the compiled episode loop, built once per build.

:mod:`market.game.episodes` holds the loop (a seed's episodes, its Bellman
updates, its statistics, the greedy test) and documents its draws; this
module builds it (:func:`market.compiled.build.build`), checks the arguments
of the one compiled signature, and holds the lock its thread pool needs.
:mod:`market.game.training` decides *what* to run (schemes, snapshots,
schedules, cycles) and calls :func:`play` on chunks of episodes; nothing
else plays the game for training.

Why compiled: an episode is at most ``2T`` moves of a few comparisons each.
Per-call overhead of numpy (or of Python) is far larger than the work, so
only a compiled loop trains one seed fast (tens of millions of moves a
second); seeds run in parallel over the cores (``prange``).
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable

import numpy as np

from market.compiled import build, jit
from market.compiled.jit import numba
from market.errors import CompileError, reraise_signal
from market.game import episodes
from market.game.pressure import Pressure
from market.processes import compiled_code

if numba is not None and "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own thread pool starts a parallel region in well under a millisecond even
    # on a busy machine, where OpenMP's sleeping threads took milliseconds to wake (and
    # training calls the kernel once per cycle). It is fork-safe but not thread-safe:
    # every call holds :data:`_lock`.
    numba.config.THREADING_LAYER = "workqueue"

#: columns of the per-episode statistics :func:`play` accumulates, in order
COUNT_COLUMNS = (
    "seller_validated",
    "seller_rejected",
    "buyer_validated",
    "buyer_rejected",
    "seller_wallet",
    "buyer_wallet",
    "deals",
    "breakdowns",
)


def seed_states(seed: int, n: int) -> np.ndarray:
    """``(n, 4)`` generator states: seed index ``i`` from ``SeedSequence(seed, spawn_key=(i,))``.

    The same as ``SeedSequence(seed).spawn(n)[i]``, so seed index ``i`` of a
    run gets the same stream whatever ``n`` is.
    """
    out = np.empty((n, 4), dtype=np.uint64)
    for i in range(n):
        out[i] = np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(4, np.uint64)
    return out


# --- compiling ----------------------------------------------------------------------------------
#: held by every call of :func:`run`: the workqueue thread pool runs one parallel region at a
#: time, and a view may train from several threads
_lock = threading.Lock()
_module: types.ModuleType | None = None


def ensure_compiled(on_compile: Callable[[], None] | None = None) -> None:
    """Build the kernel (seconds, once per build): ``on_compile`` is called first, only then.
    Raises :class:`~market.errors.CompileError` with one line when numba cannot compile
    here."""
    global _module
    if _module is not None:
        return
    if numba is None:
        raise jit.missing("the training kernel")
    try:
        module = episodes
        build.build(module, {"run": lambda: _call(
            module, np.zeros((1, 2, 1, 4, 4)), seed_states(0, 1),
            np.zeros((1, 1, 7), dtype=np.int64), np.ones(2), np.ones(2), 0, (True, True), 1.0,
            False, 0, 2, None, 0.0, Pressure(), 0.0)}, on_compile)
    except Exception as exc:
        reraise_signal(exc)
        raise CompileError(f"numba cannot compile the training kernel on this machine "
                           f"({type(exc).__name__}: {jit.first_line(exc)})") from exc
    _module = module


#: the document's game: no time pressure
NO_PRESSURE = Pressure()


def play(
    q: np.ndarray, rng: np.ndarray, counts: np.ndarray, eps: np.ndarray, lr: np.ndarray,
    first0: int, learns: tuple[bool, bool], gamma: float, stale_first: bool = False,
    e0: int = 0, per_cycle: int | None = None, log: np.ndarray | None = None,
    bonus: float = 0.0, pressure: Pressure = NO_PRESSURE, starts: float = 0.0,
) -> None:
    """:func:`market.game.episodes.run` with its arguments checked and converted to the one
    compiled signature (its tuples).

    Compiles on first use (see :func:`ensure_compiled`); ``per_cycle``
    defaults to ``len(eps)`` (every episode counted in slot 0). ``pressure``:
    the game's time pressure (:class:`~market.game.pressure.Pressure`; none by
    default).
    """
    ensure_compiled()
    n = q.shape[0]
    if q.ndim != 5 or q.shape[1] != 2 or q.dtype != np.float64 or not q.flags.c_contiguous:
        raise ValueError("q must be a C-contiguous float64 (n, 2, R, S, A) array")
    if rng.shape != (n, 4) or rng.dtype != np.uint64 or not rng.flags.c_contiguous:
        raise ValueError("rng must be a C-contiguous uint64 (n, 4) array")
    if counts.ndim != 3 or counts.shape[0] != n or counts.shape[2] != len(COUNT_COLUMNS) or (
            counts.dtype != np.int64):
        raise ValueError(f"counts must be an int64 (n, C, {len(COUNT_COLUMNS)}) array")
    if eps.shape != lr.shape or eps.ndim != 1:
        raise ValueError("eps and lr must be 1-d arrays of one value per episode")
    per = len(eps) if per_cycle is None else int(per_cycle)
    if len(eps) and (int(e0) + len(eps) - 1) // max(per, 1) >= counts.shape[1]:
        raise ValueError("counts has too few cycle slots for these episodes")
    assert _module is not None
    _call(_module, q, rng, counts, np.ascontiguousarray(eps, dtype=np.float64),
          np.ascontiguousarray(lr, dtype=np.float64), first0, learns, gamma, stale_first, e0,
          max(per, 1), log, bonus, Pressure(*(float(x) for x in pressure)), starts)


def _call(module, q, rng, counts, eps, lr, first0, learns, gamma, stale_first, e0,  # noqa: ANN001
          per_cycle, log, bonus, pressure, starts) -> None:
    if log is None:
        log = np.zeros((0, 0, 0), dtype=np.int64)
    n, _, R, S, A = q.shape
    P = A - 2
    with _lock, compiled_code():
        module.run(q.reshape(n, -1), rng, counts, log, (int(R), int(P), int((S - 2) // P)),
                   (eps, lr, int(e0), int(per_cycle)),
                   (np.asarray(learns, dtype=np.bool_), float(gamma), float(bonus)),
                   pressure,
                   (int(first0), bool(stale_first), float(starts)))

