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
cache can never play old code (:mod:`market.compiled.compile_cache`).

When numba cannot be imported, :func:`njit` leaves functions as plain Python
(the lockstep path still runs; the compiled engine refuses with one line).
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import math
import os
from typing import Any

import numpy as np

from market.compiled import compile_cache
from market.errors import CompileError

try:  # numba is a dependency; a broken install must end in one line, not a traceback
    import numba
    from numba import prange
    from numba.np.random.random_methods import random_interval
except Exception as exc:  # pragma: no cover - exercised through a subprocess test
    numba = None
    IMPORT_ERROR: Exception | None = exc
    prange = range
else:
    IMPORT_ERROR = None


def _names_apart() -> None:
    """Name each process's compiled functions apart from every other process's.

    numba tags a compiled function's symbols and its environment (the constants its Python
    wrapper reads, such as the dtypes of the arrays it returns) with a counter each process
    starts at 1, so a function compiled first in two processes has the same names in both.
    Compiled afresh in a process that had loaded another function's cached library holding
    it (the market engine holds the ledger's ``group_means``), it shares that library's
    environment and adds its constants there; cached so, a later process that loads both
    gives it the environment without them, and every call from Python failed with
    ``SystemError: ... returned a result with an exception set`` (a fresh clone, 2026-11-28;
    ``tests/compiled/test_compile_cache.py`` replays it). Counting from a random start
    keeps two processes' names apart. Only names change: no value, no draw."""
    from numba.core.bytecode import FunctionIdentity

    FunctionIdentity._unique_ids = itertools.count(int.from_bytes(os.urandom(6), "little") + 1)


if numba is not None:
    _names_apart()

#: the numba this project is tested with (pyproject.toml's pin: the guarded cache, the
#: generator handle and the names' counter (:func:`_names_apart`) use numba's internals), as
#: pip takes it
NUMBA_REQUIREMENT = "numba>=0.68,<0.69"


def first_line(exc: BaseException | None) -> str:
    """The first line of an exception's message (its type's name if it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def missing(what: str) -> CompileError:
    """The one line when numba cannot be imported and ``what`` needs it."""
    return CompileError(f"numba cannot be imported ({first_line(IMPORT_ERROR)}); {what} "
                        f"needs it: pip install '{NUMBA_REQUIREMENT}'")


def _prefetch_intrinsic() -> Any:
    """:func:`prefetch` compiled: LLVM's ``llvm.prefetch`` (a read, kept in every cache
    level) of the address of ``arr[i]``, through numba's public ``intrinsic``."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx: Any, arr: Any, i: Any) -> Any:  # noqa: ARG001
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                           wraparound=False)
            byte, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]),
                "llvm.prefetch.p0")
            builder.call(fn, [builder.bitcast(ptr, byte), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(arr, i), codegen

    return prefetch


def _no_prefetch(arr: np.ndarray, i: int) -> None:
    """Without numba, :func:`prefetch` has nothing to ask for."""


#: ``prefetch(arr, i)``: ask the memory system now for the cache line of ``arr[i]`` (a 1-d
#: array), which the code will read a little later; it changes no value. A learner's
#: decision reads one row of a random member's table per negotiation: past a few thousand
#: learners those reads miss the caches, and asking for each row eight negotiations ahead
#: took a mixed market's first step from 3.2-4.2 to 2.5-3.4 ms at 5,000 + 5,000 traders
#: and from 128-152 to 98-106 ms at 100,000 + 100,000.
prefetch = _no_prefetch if numba is None else _prefetch_intrinsic()


def _borrowed_intrinsic() -> Any:
    """:func:`borrowed` compiled: the same array (each array of a tuple, nested tuples
    included) with no owner: its meminfo and parent pointers null, its data, shape and
    strides the caller's."""
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    def lend(context: Any, builder: Any, ty: Any, value: Any) -> Any:
        if isinstance(ty, types.Array):
            src = context.make_array(ty)(context, builder, value)
            out = context.make_array(ty)(context, builder)
            for name in ("nitems", "itemsize", "data", "shape", "strides"):
                setattr(out, name, getattr(src, name))
            out.meminfo = cgutils.get_null_value(out.meminfo.type)
            out.parent = cgutils.get_null_value(out.parent.type)
            return out._getvalue()
        if isinstance(ty, types.BaseTuple):
            items = [lend(context, builder, t, builder.extract_value(value, i))
                     for i, t in enumerate(ty)]
            return context.make_tuple(builder, ty, items)
        return value  # a scalar: nothing to own

    @intrinsic
    def borrowed(typingctx: Any, value: Any) -> Any:  # noqa: ARG001
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return lend(context, builder, signature.args[0], args[0])

        return value(value), codegen

    return borrowed


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
borrowed = _as_is if numba is None else _borrowed_intrinsic()


def _generator_intrinsic() -> Any:
    """:func:`generator` compiled: numba's ``Generator`` made from :func:`rng_handle`'s
    integers (the fields numba's own unboxing reads through ``ctypes`` on every call), or
    a ``Generator`` passed through as it is."""
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic

    @intrinsic
    def generator(typingctx: Any, handle: Any) -> Any:  # noqa: ARG001
        if isinstance(handle, types.NumPyRandomGeneratorType):
            def same(context: Any, builder: Any, signature: Any, args: Any) -> Any:
                return impl_ret_borrowed(context, builder, signature.return_type, args[0])

            return handle(handle), same
        if not (isinstance(handle, types.UniTuple) and handle.count == len(_HANDLE_FIELDS)
                and isinstance(handle.dtype, types.Integer)):
            return None
        gen_t = types.NumPyRandomGeneratorType("rng")

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fields = cgutils.unpack_tuple(builder, args[0])
            bits = cgutils.create_struct_proxy(types.NumPyRandomBitGeneratorType(
                "bit_generator"))(context, builder)
            for name, value in zip(_HANDLE_FIELDS, fields, strict=True):
                setattr(bits, name, value)
            gen = cgutils.create_struct_proxy(gen_t)(context, builder)
            gen.bit_generator = bits._getvalue()  # no parent object, no meminfo: never boxed
            return gen._getvalue()

        return gen_t(handle), codegen

    return generator


#: what numba's ``Generator`` holds of the bit generator, in :func:`rng_handle`'s order
_HANDLE_FIELDS = ("state_address", "state", "fnptr_next_uint64", "fnptr_next_uint32",
                  "fnptr_next_double")


def rng_handle(rng: np.random.Generator) -> Any:
    """What a compiled entry point takes in place of ``rng`` (:func:`generator` makes it a
    ``Generator`` again inside): the addresses of its bit generator's state and functions.

    numba unboxes a ``Generator`` argument through Python (``ctypes`` casts, attribute
    look-ups) on every call: 9.2 us, a tenth of a 50 + 50 market's step, against 0.4 us
    for these five integers. The draws are the same, from the same state: the caller
    keeps ``rng`` alive while the handle is used (its addresses are its bit generator's).
    Without numba, ``rng`` itself.
    """
    if numba is None:
        return rng
    import ctypes

    ct = rng.bit_generator.ctypes
    address = [ctypes.cast(f, ctypes.c_void_p).value or 0
               for f in (ct.next_uint64, ct.next_uint32, ct.next_double)]
    return (int(ct.state_address), int(ct.state.value or 0), *address)


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
generator = _same if numba is None else _generator_intrinsic()


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit``, its ``cache=True`` guarded (:mod:`market.compiled.compile_cache`): the
    cache is keyed on every source compiled in, and a damaged or unwritable cache is a
    notice, not an error; ``nogil`` by default. Signatures given (``njit("f8(f8)")`` or a
    list of them) are compiled at once, through that cache, as numba does. Without numba,
    the function itself (plain Python)."""
    cache = kwargs.pop("cache", False)
    # the GIL released while machine code runs: a thread of ours can still end the command
    # on Ctrl-C when compiled code does not return (market.processes.sigterm_exits)
    kwargs.setdefault("nogil", True)
    given = args[0] if args and not callable(args[0]) else None
    signatures = [given] if isinstance(given, str) else list(given or [])

    def wrap(f: Any) -> Any:
        with contextlib.suppress(TypeError):  # its file as defined, for the caches' digests
            compile_cache.remember(inspect.getfile(f))
        if numba is None:
            return f
        dispatcher = numba.njit(**kwargs)(f)
        if cache:
            guarded = compile_cache.guarded_cache(dispatcher.py_func)
            if guarded is not None:
                dispatcher._cache = guarded  # what numba's enable_caching() sets
        for signature in signatures:  # numba's eager compile, after the cache is in place
            dispatcher.compile(signature)
        if signatures:
            dispatcher.disable_compile()
        return dispatcher

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
    from numba.core import types as _types
    from numba.extending import overload
    from numba.np.random.random_methods import (
        bounded_lemire_uint64,
        buffered_bounded_lemire_uint32,
        next_uint32,
        next_uint64,
    )

    @overload(integer, jit_options={"cache": True})
    def _integer_compiled(rng: Any, low: Any, high: Any) -> Any:
        """numba's ``integers(low, high)`` for an int64 (numba's ``random_bounded_uint64_fill``
        of one item), without the array."""
        if not isinstance(rng, _types.NumPyRandomGeneratorType):
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
