"""numba, imported once, and the few numeric functions both paths of the market must share.

The market runs a step either in the compiled engine (:mod:`market.sim.engine`)
or, for strategies without a compiled decision, on the readable lockstep
path (:mod:`market.game.protocol`). The two must give the same tables bit
for bit from the same seed. Integer rules and IEEE ``+ - * /`` agree by
themselves; transcendental functions do not: numpy evaluates ``exp`` and
``power`` on arrays with its own SIMD kernels (AVX-512 on these machines),
numba with the C library, and the two differ in the last bit for a few
inputs in a thousand. A last bit is enough to flip ``u < epsilon`` or the
rounding of a concession level once in a long run. So every strategy that
needs ``exp`` or ``power`` calls :func:`exp` and :func:`power` here, which run
the same compiled code the engine inlines (:func:`exp1`, :func:`power1`).

Every ``cache=True`` here and in the project goes through :func:`njit`, whose
cache lives in this build's folder (:mod:`market.compiled.build`): never old code.

When numba cannot be imported, :func:`njit` leaves functions as plain Python
(the lockstep path still runs; the compiled engine refuses with one line).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from market.compiled import build, internals
from market.errors import CompileError

numba = internals.numba
IMPORT_ERROR = internals.IMPORT_ERROR
if numba is not None:
    from numba import prange

    internals.names_apart()
    internals.guard_cache()
    if internals.version_note():
        internals.note(internals.version_note())
else:  # pragma: no cover - numba missing
    prange = range

#: the numba this project supports, as pip takes it
NUMBA_REQUIREMENT = internals.REQUIREMENT


def first_line(exc: BaseException | None) -> str:
    """The first line of an exception's message (its type's name if it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def missing(what: str) -> CompileError:
    """The one line when numba cannot be imported and ``what`` needs it."""
    return CompileError(f"numba cannot be imported ({first_line(IMPORT_ERROR)}); {what} "
                        f"needs it: pip install '{NUMBA_REQUIREMENT}'")


def _no_prefetch(arr: np.ndarray, i: int) -> None:
    """Without numba, :func:`prefetch` has nothing to ask for."""


#: ``prefetch(arr, i)``: ask the memory system now for the cache line of ``arr[i]`` (a 1-d
#: array), which the code will read a little later; it changes no value. A learner's
#: decision reads one row of a random member's table per negotiation: past a few thousand
#: learners those reads miss the caches, and asking for each row eight negotiations ahead
#: took a mixed market's first step from 3.2-4.2 to 2.5-3.4 ms at 5,000 + 5,000 traders
#: and from 128-152 to 98-106 ms at 100,000 + 100,000.
prefetch = _no_prefetch if numba is None else internals.prefetch_intrinsic()


def _as_is(value: Any) -> Any:
    """Without numba, :func:`borrowed` has the arrays themselves."""
    return value


#: ``borrowed(arrays)`` in compiled code: an argument's arrays (an array, or a tuple of them)
#: lent for the call, without their owner. numba counts the references of every array a
#: function passes on, even to a function it inlines, with two atomic operations each: a
#: Q-learner's decision made seven such pairs a row, and a 50 + 50 mixed market's step
#: about 3,000. A lent array has no owner to count, so those operations vanish (the step's
#: compiled part went from 33 to 20 us). Lend only what the caller keeps alive for the
#: call (its arguments), and never return, store or hand back to Python a lent array.
borrowed = _as_is if numba is None else internals.borrowed_intrinsic()


def rng_handle(rng: np.random.Generator) -> Any:
    """What a compiled entry point takes in place of ``rng`` (:func:`generator` makes it a
    ``Generator`` again inside): the addresses of its bit generator's state and functions.

    numba unboxes a ``Generator`` argument through Python (``ctypes`` casts, attribute
    look-ups) on every call: 9.2 us, a tenth of a 50 + 50 market's step, against 0.4 us
    for these five integers. The draws are the same, from the same state: the caller
    keeps ``rng`` alive while the handle is used (its addresses are its bit generator's).
    Without numba, ``rng`` itself.
    """
    return rng if numba is None else internals.rng_handle(rng)


class Handles:
    """The :func:`rng_handle` of the generator a caller is given, made again only when that
    is another generator (recognised by its bit generator, held here: an address of its
    state is not reused while it lives). A copy or a pickle of it starts empty, so a model
    or environment that was copied (with its generator) never draws from the original's
    state. Call it with the generator the compiled call is about to receive: the handle is
    good while that generator lives."""

    __slots__ = ("_bits", "_handle")

    def __init__(self) -> None:
        self._bits: Any = None
        self._handle: Any = None

    def __call__(self, rng: np.random.Generator) -> Any:
        bits = rng.bit_generator
        if bits is not self._bits:  # an identity test: reading the state's address cost
            self._bits, self._handle = bits, rng_handle(rng)  # 0.7 us a step
        return self._handle

    def __reduce__(self) -> tuple[type[Handles], tuple[()]]:
        return Handles, ()


def _same(rng: Any) -> Any:
    """Without numba, :func:`generator` has the generator itself."""
    return rng


#: ``generator(rng_or_handle)`` in compiled code: the ``Generator`` of a :func:`rng_handle`
#: (or a ``Generator`` as it is), so an entry point takes either
generator = _same if numba is None else internals.generator_intrinsic()


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit``, ``nogil`` by default, its ``cache=True`` kept in this build's folder
    (:func:`market.compiled.build.numba_folder`: never played after an edit; a user's own
    function compiles in each process). Without numba, the function itself (plain Python)."""
    cache = kwargs.pop("cache", False)
    # the GIL released while machine code runs: a thread of ours can still end the command
    # on Ctrl-C when compiled code does not return (market.processes.sigterm_exits)
    kwargs.setdefault("nogil", True)

    def wrap(f: Any) -> Any:
        if numba is None:
            return f
        where = build.numba_folder(f) if cache else None
        if where is None:
            return numba.njit(**kwargs)(f)
        return internals.cache_in(where, lambda: numba.njit(cache=True, **kwargs)(f))

    return wrap(args[0]) if args and callable(args[0]) else wrap


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


__all__ = ["IMPORT_ERROR", "Handles", "borrowed", "exp", "exp1", "generator", "integer", "njit",
           "numba", "permutation", "power", "power1", "prange", "rng_handle"]
