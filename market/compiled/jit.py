"""numba, imported once: the ``njit`` every compiled function goes through, and how compiled
entry points take arrays and generators cheaply.

Every ``cache=True`` in the project goes through :func:`njit`, whose cache
lives in this build's folder (:mod:`market.compiled.build`): never old code.
:func:`borrowed` lends arrays without reference counting, :func:`rng_handle`
and :func:`generator` pass a ``Generator`` as five integers, and
:func:`prefetch` asks for memory early; their numba side is
:mod:`market.compiled.internals`.

When numba cannot be imported, :func:`njit` leaves functions as plain Python
(the lockstep path still runs; the compiled engine refuses with one line).
"""
from __future__ import annotations

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
#: call (its arguments), and never return, store or hand back to Python a lent array. Not
#: arrays a caller made in the call's own expression (``learn(..., reward[s, rows], ...)``):
#: lent, those were freed while the callee read them (tests/sim/test_freed_memory.py).
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


__all__ = ["IMPORT_ERROR", "Handles", "borrowed", "generator", "njit", "numba", "prange",
           "rng_handle"]
