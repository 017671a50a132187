"""The arithmetic both paths of the market share, bit for bit: ``exp``, ``power``, a
permutation and one integer draw.

The market runs a step either in the compiled engine (:mod:`market.sim.engine`)
or, for strategies without a compiled decision, on the readable lockstep
path (:mod:`market.game.protocol`); the two give the same tables from the same
seed. Integer rules and IEEE ``+ - * /`` agree by themselves; transcendental
functions do not: numpy evaluates ``exp`` and ``power`` on arrays with its own
SIMD kernels, numba with the C library, and the two differ in the last bit
for a few inputs in a thousand, enough to flip ``u < epsilon`` once in a long
run. So every strategy that needs ``exp`` or ``power`` calls :func:`exp` and
:func:`power` here, which run the same compiled code the engine inlines
(:func:`exp1`, :func:`power1`); :func:`permutation` and :func:`integer` draw
what numpy draws, from the same state, on scalars.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from market.compiled import internals
from market.compiled.jit import njit, numba

#: two values closer than this, relative to the node being solved (the largest magnitude among
#: the values compared there), count as a tie: a deep subgame's values are small (discounted
#: from the root, weighed by the chance to get there), so an absolute tolerance would make
#: all of them ties
TIE_TOL = 1e-12


@njit(cache=True, inline="always")
def exp1(x: float) -> float:
    """``exp(x)`` as the compiled engine computes it. Below -746 it is 0.0 without asking the
    C library, whose underflow path (setting ``errno``) cost a learner's epsilon schedule a
    tenth of its decision once the schedule had decayed: the same bits either way."""
    if x < -746.0:
        return 0.0
    return math.exp(x)


@njit(cache=True, inline="always")
def power1(x: float, y: float) -> float:
    """``x ** y`` as the compiled engine computes it."""
    return x**y


@njit(cache=True)
def _exp_all(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = exp1(x[i])


@njit(cache=True)
def _power_all(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = power1(x[i], y[i])


def exp(x: np.ndarray | float) -> np.ndarray:
    """Elementwise ``exp``, bit for bit what the compiled engine computes."""
    a = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(a)
    _exp_all(a.reshape(-1), out.reshape(-1))
    return out


def power(x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray:
    """Elementwise ``x ** y`` (broadcast), bit for bit what the compiled engine computes."""
    a, b = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    a, b = np.array(a, copy=True), np.array(b, copy=True)  # own, writeable, contiguous
    out = np.empty(a.shape)
    _power_all(a.reshape(-1), b.reshape(-1), out.reshape(-1))
    return out


if numba is not None:
    from market.compiled.internals import random_interval

    @njit(cache=True)
    def permutation(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        """``rng.permutation(x)`` of a 1-d array: numpy's own shuffle, draw for draw.

        numba's ``Generator.permutation`` gives the same result but swaps
        through 0-d array slices, ten times slower than numpy; this is the
        same Fisher-Yates loop (``random_interval`` from the last index down)
        on scalars.
        """
        out = x.copy()
        bitgen = rng.bit_generator
        for i in range(out.size - 1, 0, -1):
            j = np.intp(random_interval(bitgen, i))
            out[i], out[j] = out[j], out[i]
        return out
else:  # pragma: no cover - numba missing

    def permutation(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        """``rng.permutation(x)``."""
        return rng.permutation(x)


def integer(rng: np.random.Generator, low: int, high: int) -> int:
    """One draw of ``rng.integers(low, high)`` (``low`` to ``high - 1``): the same number, from
    the same state, in Python and in compiled code.

    Compiled, numba's scalar ``Generator.integers`` fills a one-element array and
    returns its item: an allocation and its release per draw, which was most of a
    ZI-C trader's decision. Its compiled form here (:func:`_integer_compiled`) is numba's
    own bounded draw on scalars: the same branches, the same draws."""
    return int(rng.integers(low, high))


if numba is not None:
    from numba.extending import overload

    from market.compiled.internals import (
        bounded_lemire_uint64,
        buffered_bounded_lemire_uint32,
        next_uint32,
        next_uint64,
    )

    @overload(integer, jit_options={"cache": True})
    def _integer_compiled(rng: Any, low: Any, high: Any) -> Any:
        """numba's ``integers(low, high)`` for an int64 (numba's ``random_bounded_uint64_fill``
        of one item), without the array."""
        if not internals.is_generator(rng):
            return None

        def draw(rng: Any, low: Any, high: Any) -> Any:  # noqa: ANN401
            if low >= high:
                raise ValueError("integer: low >= high")
            low, top = np.int64(low), np.int64(high) - np.int64(1)
            span = np.uint64(top - low)
            bitgen = rng.bit_generator
            if span == 0:
                return low
            if span <= 0xFFFFFFFF:
                if span == 0xFFFFFFFF:
                    return np.int64(low + next_uint32(bitgen))
                return np.int64(low + buffered_bounded_lemire_uint32(bitgen, span))
            if span == 0xFFFFFFFFFFFFFFFF:
                return np.int64(low + next_uint64(bitgen))
            return np.int64(low + bounded_lemire_uint64(bitgen, span))

        return draw


__all__ = ["TIE_TOL", "exp", "exp1", "integer", "permutation", "power", "power1"]
