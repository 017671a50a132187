"""numba's on-disk cache, guarded: never old code, never a traceback from a bad cache file.

Every function the project compiles with ``cache=True`` (through
:func:`market.compiled.jit.njit`) keeps its machine code in numba's cache with
three guards numba's own ``FunctionCache`` lacks:

- **Keyed on every source compiled in.** numba keys a cache entry on the
  function's bytecode and checks its own file's time stamp only; a function
  it inlines *from another file* can change without numba noticing, and the
  old machine code plays on (beside the sources, under ``NUMBA_CACHE_DIR``,
  or in numba's user folder when ``__pycache__`` cannot be written). Here the
  key also holds the sha256 of every source file whose compiled functions the
  function can reach (:func:`reachable`), so an edit anywhere is a miss.
- **A damaged file is discarded.** An index or data file that cannot be read
  (garbage, cut short, empty, unreadable) is removed and the function
  compiled afresh, with one notice line; numba would raise its unpickling
  error on every run.
- **A folder that cannot be written is worked around.** The function is
  compiled in memory for this run, with one notice line, instead of failing
  on ``Permission denied``.

The generated modules (:mod:`market.compiled.generated`) are named by the same
digest, so their own cache files can never be stale either.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import shutil
import types
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from market.errors import Notice, reraise_signal


class CacheNotice(Notice):
    """numba's cache could not be used as is (damaged or not writable); the work goes on."""


def py_function(f: Any) -> Any:
    """The Python function under a numba dispatcher (or the function itself)."""
    return getattr(f, "py_func", f)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _walk(functions: Iterable[Any]) -> Iterator[types.FunctionType]:
    """Each Python function of ``functions`` and of every compiled function they call,
    followed through their globals (and the attributes of modules they name), once."""
    seen: set[int] = set()
    stack = [f for f in functions if f is not None]
    while stack:
        py = py_function(stack.pop())
        if not isinstance(py, types.FunctionType) or id(py) in seen:
            continue
        seen.add(id(py))
        yield py
        names = _code_names(py.__code__)
        for name in names:
            value = py.__globals__.get(name)
            if isinstance(value, types.ModuleType):
                stack.extend(getattr(value, a) for a in names
                             if hasattr(getattr(value, a, None), "py_func"))
            elif hasattr(value, "py_func") or (
                    isinstance(value, types.FunctionType) and value is not py):
                stack.append(value)


def reachable(functions: Iterable[Any]) -> set[Path]:
    """Every source file of ``functions`` and of every compiled function they call, followed
    through their globals (and the attributes of modules they name), and of every class they
    name: a record type a compiled function builds or reads (the market step makes the
    game's ``Pressure`` from its fields) is compiled in by its fields' order."""
    files: set[Path] = set()
    for py in _walk(functions):
        with contextlib.suppress(TypeError):
            files.add(Path(inspect.getfile(py)))
        for name in _code_names(py.__code__):
            value = py.__globals__.get(name)
            if isinstance(value, type):
                with contextlib.suppress(TypeError, OSError):  # a built-in class: no file
                    files.add(Path(inspect.getfile(value)))
    return files


#: the values numba freezes into machine code when a compiled function reads a global
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def _plain(value: Any) -> bool:
    """A value whose ``repr`` says all of it, the same in every process (no addresses)."""
    if isinstance(value, tuple | frozenset):
        return all(_plain(v) for v in value)
    return isinstance(value, _SCALARS)


def frozen(functions: Iterable[Any]) -> str:
    """The values of the globals these functions (and what they reach) read as constants:
    numba compiles them into the code, so a value imported from another module, or read
    from the environment at import, is part of what was compiled, not of the source text."""
    out = []
    for py in _walk(functions):
        names = _code_names(py.__code__)
        for name in sorted(names):
            value = py.__globals__.get(name)
            holders = [(name, value)]
            if isinstance(value, types.ModuleType):  # consts.LEVEL
                holders = [(f"{name}.{a}", getattr(value, a, None)) for a in sorted(names)]
            for label, v in holders:
                if _plain(v):
                    out.append(f"{py.__module__}.{py.__qualname__}:{label}={v!r}")
                elif not isinstance(v, type) and hasattr(v, "tobytes") and hasattr(v, "dtype"):
                    text = hashlib.sha256(v.tobytes()).hexdigest()
                    out.append(f"{py.__module__}.{py.__qualname__}:{label}={v.dtype}:{text}")
    return hashlib.sha256("\n".join(sorted(set(out))).encode()).hexdigest()


_digests: dict[Path, str] = {}
_stats: dict[Path, tuple[int, int]] = {}


def remember(path: Path | str) -> None:
    """Record the digest of ``path`` as it is now: called when code is defined from it (a
    compiled function decorated, a strategy class made), so that a later edit, made while
    this process runs, cannot name the code in memory (helper-found race: an edit between a
    module's import and its first compile stored old machine code under the new digest)."""
    path = Path(path)
    try:
        stat = path.stat()
        seen = (stat.st_mtime_ns, stat.st_size)
        if _stats.get(path) != seen or path not in _digests:  # a file of many functions:
            _digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()  # read once
            _stats[path] = seen
    except OSError:
        _digests[path] = "unreadable"


def file_digest(path: Path) -> str:
    """The sha256 of a source file's bytes as its code was defined in this process
    (:func:`remember`), else as first read."""
    if path not in _digests:
        remember(path)
    return _digests[path]


_said: set[str] = set()


def _notice(text: str, once: str = "") -> None:
    """Warn ``text``; with ``once``, only the first time this process meets that case."""
    if once:
        if once in _said:
            return
        _said.add(once)
    warnings.warn(text, CacheNotice, stacklevel=3)


@functools.cache
def _guarded_class() -> type:
    """numba's ``FunctionCache`` with the guards above (made once numba is imported)."""
    from numba.core.caching import FunctionCache

    class GuardedCache(FunctionCache):
        _sources: str | None = None

        def _index_key(self, sig: Any, codegen: Any) -> Any:
            if self._sources is None:
                digest = hashlib.sha256()
                for text in sorted(file_digest(p) for p in reachable([self._py_func])):
                    digest.update(text.encode())  # by content, wherever the file lives
                self._sources = digest.hexdigest()
            return (*super()._index_key(sig, codegen), self._sources)

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            try:
                return super().load_overload(sig, target_context)
            except Exception as exc:
                reraise_signal(exc)
                self._discard(exc)
                return None  # a miss: numba compiles it

        def save_overload(self, sig: Any, data: Any) -> None:
            try:
                super().save_overload(sig, data)
            except Exception as exc:
                reraise_signal(exc)
                self.disable()
                if "no compiled object yet" in str(exc):  # a compile cut short by a signal:
                    return  # nothing to write, and nothing wrong with the folder
                _notice(f"numba cannot write its cache ({_reason(exc)}); what it cannot "
                        "write is compiled in memory for this run", once="write")

        def _files(self) -> list[Path]:
            folder = Path(self._cache_path)
            base = self._impl.filename_base
            return [folder / f"{base}.nbi", *folder.glob(f"{base}.*.nbc")]

        def _discard(self, exc: BaseException) -> None:
            """Remove this function's damaged cache files, so its next save starts afresh."""
            failed = []
            for path in self._files():
                try:
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    else:
                        path.unlink(missing_ok=True)
                except OSError:
                    failed.append(path)
            name = getattr(self._py_func, "__qualname__", "?")
            if failed:
                self.disable()
                _notice(f"numba's cache of {name} cannot be read ({_reason(exc)}) nor removed "
                        f"({failed[0]}); compiled in memory for this run")
            else:
                _notice(f"numba's cache of {name} was damaged ({_reason(exc)}); removed, "
                        "compiling afresh")

    return GuardedCache


def guarded_cache(py_func: Any) -> Any:
    """A numba cache for ``py_func`` with the guards above, or None (with one notice) when
    numba finds no folder it may write to: the function then compiles in memory."""
    try:
        return _guarded_class()(py_func)
    except Exception as exc:  # numba's "no locator available": no folder it may write to
        reraise_signal(exc)
        _notice(f"numba has no cache folder it may write to ({_reason(exc)}); "
                "compiling in memory for this run", once="locator")
        return None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:160]


__all__ = ["CacheNotice", "file_digest", "frozen", "guarded_cache", "py_function",
           "reachable", "remember"]
