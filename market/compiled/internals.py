"""What the project takes from numba beyond its public API, in one place, and why.

Everything else compiles through numba's public API (``numba.njit`` with
``cache=True``, ``numba.extending.intrinsic`` and ``overload``). What is here
is kept for a measured speed-up, for draws identical to numpy's, or for a
guarantee, each named where it is defined:

==============  ====================================================  ========================
borrowed        an argument's arrays lent without an owner (cgutils)  speed (33 -> 20 us a step)
generator       numba's ``Generator`` from five integers (cgutils)    speed (9.2 -> 0.4 us a call)
prefetch        LLVM's prefetch of ``arr[i]`` (cgutils)               speed (large markets)
random_methods  numba's own bounded and interval draws                numpy's draws, on scalars
names_apart     numba's per-process name counter                      shared libraries load
cache_in        ``numba.config.CACHE_DIR`` around one decoration      never stale (build digest)
guard_cache     a damaged or unwritable cache file is one note        no traceback from a cache
==============  ====================================================  ========================

:data:`SUPPORTED` names the numba releases these are tested with (the oldest
and the newest in CI); another release works as long as numba kept them, and
is said once, as a note.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from market.errors import Notice

try:  # numba is a dependency; a broken install must end in one line, not a traceback
    import numba
    from numba.np.random.random_methods import (
        bounded_lemire_uint64,
        buffered_bounded_lemire_uint32,
        next_uint32,
        next_uint64,
        random_interval,
    )
except Exception as exc:  # pragma: no cover - exercised through a subprocess test
    numba = None
    IMPORT_ERROR: Exception | None = exc
    bounded_lemire_uint64 = buffered_bounded_lemire_uint32 = next_uint32 = next_uint64 = None
    random_interval = None
else:
    IMPORT_ERROR = None

#: the numba releases the internals here are tested with: the oldest (CI's second
#: environment) up to the newest (pyproject.toml's range, without an upper bound)
SUPPORTED = ((0, 61), (0, 68))
#: the same, as pip takes it
REQUIREMENT = "numba>=0.61"


class CompileNotice(Notice):
    """Compiling goes on, with something to know: a cache was damaged or cannot be used, or
    numba is a release the project was not tested with."""


def supported_words() -> str:
    """The supported range in words: ``numba 0.61 to 0.68``."""
    (a, b), (c, d) = SUPPORTED
    return f"numba {a}.{b} to {c}.{d}"


def version_note() -> str:
    """One line if the installed numba is outside :data:`SUPPORTED`, else ""."""
    if numba is None:
        return ""
    try:
        have = tuple(int(x) for x in numba.__version__.split(".")[:2])
    except ValueError:
        return ""
    if SUPPORTED[0] <= have <= SUPPORTED[1]:
        return ""
    return (f"numba {numba.__version__} is not among the releases this project is tested with "
            f"({supported_words()}); if compiling fails, pip install 'numba>=0.61,<0.69'")


def names_apart() -> None:
    """Name each process's compiled functions apart from every other process's.

    numba tags a compiled function's symbols and its environment (the constants its Python
    wrapper reads) with a counter each process starts at 1. A function cached alone and
    also linked into another function's cached library (the market engine holds the
    ledger's ``group_means``) could then share that library's environment in a later
    process, and every call from Python failed with ``SystemError``. Counting from a random
    start keeps processes apart; only names change."""
    from numba.core.bytecode import FunctionIdentity

    FunctionIdentity._unique_ids = itertools.count(int.from_bytes(os.urandom(6), "little") + 1)


_cache_lock = threading.Lock()
_private_lock = threading.RLock()


@contextlib.contextmanager
def private_writes() -> Iterator[None]:
    """What is made in the block is this user's alone (``umask 077``): the folders numba makes
    for its cache and the files it and the build write, whatever the user's umask (a shared
    group's 002 made them group-writable, and a cache that others could have written is
    never loaded: :func:`market.compiled.build.foreign`). The umask is the process's, so
    the block is short: a decoration, a cache write, a module's write."""
    with _private_lock:
        before = os.umask(0o077)
        try:
            yield
        finally:
            os.umask(before)


def cache_in(folder: str, compile_: Callable[[], Any]) -> Any:
    """``compile_()`` (a ``numba.njit(cache=True, ...)`` decoration) with numba's cache folder
    set to ``folder`` for it alone: numba places a function's cache when it is decorated, so
    the folder named by the build digest holds it, whatever ``NUMBA_CACHE_DIR`` says for
    the user's own functions."""
    with _cache_lock, private_writes():
        before = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = folder
        try:
            return compile_()
        finally:
            numba.config.CACHE_DIR = before


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:160]


_said: set[str] = set()


def note(text: str, once: str = "") -> None:
    """Warn ``text`` as a :class:`CompileNotice`; with ``once``, the first time only."""
    if once:
        if once in _said:
            return
        _said.add(once)
    warnings.warn(text, CompileNotice, stacklevel=3)


def guard_cache() -> None:
    """numba's cache, loading and saving, never a traceback: a cache file that cannot be read
    (garbage, cut short, empty, a folder) is discarded and the function compiled afresh,
    with one note; a cache that cannot be written is compiled in memory, with one note.
    numba itself raises its unpickling error on every run."""
    from numba.core.caching import Cache

    if getattr(Cache.load_overload, "guarded", False):
        return
    load, save = Cache.load_overload, Cache.save_overload

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        try:
            with _index_locked(self, fcntl.LOCK_SH):
                return load(self, sig, target_context)
        except Exception as exc:
            name = getattr(self._py_func, "__qualname__", "?")
            if _discard(self):
                note(f"numba's cache of {name} was damaged ({_reason(exc)}); removed, "
                     "compiling afresh")
            else:
                self.disable()
                note(f"numba's cache of {name} cannot be read ({_reason(exc)}) nor removed; "
                     "compiled in memory for this run")
            return None

    def save_overload(self: Any, sig: Any, data: Any) -> None:
        try:
            with private_writes(), _index_locked(self, fcntl.LOCK_EX):
                save(self, sig, data)
        except Exception as exc:
            self.disable()
            note(f"numba cannot write its cache ({_reason(exc)}); what it cannot write is "
                 "compiled in memory for this run", once="write")

    load_overload.guarded = True  # type: ignore[attr-defined]
    Cache.load_overload, Cache.save_overload = load_overload, save_overload


@contextlib.contextmanager
def _index_locked(cache: Any, how: int) -> Iterator[None]:
    """A lock between processes on one function's cache index (``how``: shared to load,
    exclusive to save). numba numbers a new overload's data file from the index it read and
    writes the index before the data, with no lock: two processes saving two signatures of
    one function at once could both take number 1, and a third then loaded one signature's
    machine code for the other (a crash, SIGSEGV, seen under ``pytest -n 2`` on a fresh
    cache). Without a lock file to hold (a read-only cache), numba's own way."""
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", "")
    try:
        fd = (os.open(f"{index}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK,
                      0o600) if index else -1)
    except OSError:
        fd = -1
    try:
        if fd >= 0:
            fcntl.flock(fd, how)
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # the lock ends with its descriptor


def _discard(cache: Any) -> bool:
    """Empty a function's cache index (a folder where it should be is removed first)."""
    import shutil

    index = getattr(cache._cache_file, "_index_path", "")
    try:
        if os.path.isdir(index) and not os.path.islink(index):
            shutil.rmtree(index)
        cache.flush()
        return True
    except Exception:
        return False


# --- compiled helpers built on numba's code generation ---------------------------------------
def prefetch_intrinsic() -> Any:
    """``prefetch(arr, i)``: LLVM's ``llvm.prefetch`` (a read, kept in every cache level) of the
    address of ``arr[i]``; it changes no value."""
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


def borrowed_intrinsic() -> Any:
    """``borrowed(value)``: the same array (each array of a tuple, nested tuples included) with
    no owner: its meminfo and parent pointers null, its data, shape and strides the
    caller's."""
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


#: what numba's ``Generator`` holds of the bit generator, in :func:`rng_handle`'s order
HANDLE_FIELDS = ("state_address", "state", "fnptr_next_uint64", "fnptr_next_uint32",
                 "fnptr_next_double")


def generator_intrinsic() -> Any:
    """``generator(handle)``: numba's ``Generator`` made from :func:`rng_handle`'s integers
    (the fields numba's own unboxing reads through ``ctypes`` on every call), or a
    ``Generator`` passed through as it is."""
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic

    @intrinsic
    def generator(typingctx: Any, handle: Any) -> Any:  # noqa: ARG001
        if isinstance(handle, types.NumPyRandomGeneratorType):
            def same(context: Any, builder: Any, signature: Any, args: Any) -> Any:
                return impl_ret_borrowed(context, builder, signature.return_type, args[0])

            return handle(handle), same
        if not (isinstance(handle, types.UniTuple) and handle.count == len(HANDLE_FIELDS)
                and isinstance(handle.dtype, types.Integer)):
            return None
        gen_t = types.NumPyRandomGeneratorType("rng")

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            fields = cgutils.unpack_tuple(builder, args[0])
            bits = cgutils.create_struct_proxy(types.NumPyRandomBitGeneratorType(
                "bit_generator"))(context, builder)
            for name, value in zip(HANDLE_FIELDS, fields, strict=True):
                setattr(bits, name, value)
            gen = cgutils.create_struct_proxy(gen_t)(context, builder)
            gen.bit_generator = bits._getvalue()  # no parent object, no meminfo: never boxed
            return gen._getvalue()

        return gen_t(handle), codegen

    return generator


def rng_handle(rng: Any) -> tuple[int, ...]:
    """The addresses of ``rng``'s bit generator's state and functions, in
    :data:`HANDLE_FIELDS`' order (numba's ``Generator`` reads them so)."""
    import ctypes

    ct = rng.bit_generator.ctypes
    address = [ctypes.cast(f, ctypes.c_void_p).value or 0
               for f in (ct.next_uint64, ct.next_uint32, ct.next_double)]
    return (int(ct.state_address), int(ct.state.value or 0), *address)


def is_generator(ty: Any) -> bool:
    """Whether a numba type is numpy's ``Generator``."""
    from numba.core import types

    return isinstance(ty, types.NumPyRandomGeneratorType)


__all__ = ["IMPORT_ERROR", "REQUIREMENT", "SUPPORTED", "CompileNotice", "borrowed_intrinsic",
           "cache_in", "generator_intrinsic", "guard_cache", "names_apart", "note", "numba",
           "prefetch_intrinsic", "random_interval", "rng_handle", "supported_words",
           "version_note"]
