"""Compiled modules named by the digest of their sources: numba's cache can never play old code.

numba caches a function's machine code per source file and checks only that
file's time stamp: an edit to a function it inlines *from another file*
(the Bellman update into the training loop, a rule into the market's step)
leaves the old machine code in place, wherever the cache lives (beside the
sources, under ``NUMBA_CACHE_DIR``, or in numba's user folder when
``__pycache__`` cannot be written). So every compiled entry point of the
project (the training kernel, the market engine, the environments, a
strategy's own batch decision) is compiled from a *generated* module: a
file whose name is the sha256 of its text and of every source file whose
compiled functions it can reach (followed through globals and the
attributes of modules they name), plus numba's version. An edit anywhere in
that set names a new file, compiled afresh; an unchanged set finds its file
and numba's cache of it.

Generated files live in :func:`cache_dir`, with a fixed time stamp per
digest (so processes writing the same file at once agree on numba's key),
and a ``.used`` marker touched on every load, from which :func:`prune`
removes what has not been used for a while. A damaged generated file is
written anew; a damaged numba cache file of it is removed and the function
compiled afresh by the guard every cached function has
(:mod:`market.compiled.compile_cache`), never reported on every run.

A *template* is an ordinary module of compiled functions whose stand-in
imports (lines marked :data:`BOUND`) are replaced by generated definitions;
its text is copied into the generated module (:func:`template_text`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import inspect
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from market.compiled import compile_cache, jit

#: marks a template's stand-in import, replaced by the generated definitions
BOUND = "# bound when generated"

#: a generated module unused for this long is removed when another one is written
KEEP_SECONDS = 14 * 24 * 3600
#: ... and beyond this many, the least recently used that have not been used for an hour
KEEP_MODULES = 48

_modules: dict[tuple[Any, ...], types.ModuleType] = {}
_lock = threading.RLock()


def cache_dir() -> Path:
    """Where generated modules (and numba's cache of them) live: ``$NEGOTIATION_MARKET_CACHE``,
    else ``$XDG_CACHE_HOME/negotiation-market``, else ``~/.cache/negotiation-market``; when
    that cannot be written, ``$TMPDIR/negotiation-market-UID``.

    numba unpickles the cache files it finds there, so a folder is used only if this user
    owns it and nobody else may write to it (as ssh treats its keys; a folder of ours that
    others may write to is closed first). When neither folder qualifies, the modules are
    compiled for this run alone, in a fresh private folder removed at exit, with one note.
    """
    base = os.environ.get("NEGOTIATION_MARKET_CACHE")
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "negotiation-market"
    fallback = Path(tempfile.gettempdir()) / f"negotiation-market-{os.getuid()}"
    reasons = []
    for candidate in (root, fallback):
        where = candidate / "compiled"
        why = _unusable(candidate, where)
        if not why:
            return where
        reasons.append(why)
    return _private("; ".join(reasons))


def _unusable(root: Path, where: Path) -> str:
    """Why ``where`` (inside ``root``) cannot hold compiled code, or "" if it can: it can be
    made and written, and this user owns it and ``root`` with nobody else writing."""
    try:
        for folder in (root, where):
            if not folder.is_dir():
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for folder in (root, where, where / "__pycache__"):
            if not folder.exists():
                continue
            st = folder.stat()
            if st.st_uid != os.getuid():
                return f"{folder} is owned by another user"
            if st.st_mode & 0o022:
                os.chmod(folder, stat.S_IMODE(st.st_mode) & ~0o022)  # ours: closed to others
        probe = where / f".probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return ""
    except OSError as exc:
        return f"{where} cannot be written ({exc.strerror or exc})"


_own_folder: list[Path] = []


def _private(why: str) -> Path:
    """A fresh folder of this process (this user's alone; removed at exit), said once."""
    with _lock:
        if not _own_folder:
            folder = Path(tempfile.mkdtemp(prefix="negotiation-market-run-"))
            _own_folder.append(folder)
            atexit.register(shutil.rmtree, folder, True)
            warnings.warn(f"no cache folder can be trusted ({why}); compiling in memory for "
                          "this run",
                          compile_cache.CacheNotice, stacklevel=3)
        return _own_folder[0]


def template_text(module: types.ModuleType) -> str:
    """A template's source without its stand-in imports (a line marked ``BOUND``, or a
    parenthesised import whose first line is) and its ``__future__`` line."""
    keep, skipping = [], False
    for line in inspect.getsource(module).splitlines():
        if skipping:
            skipping = line != ")"
        elif BOUND in line:
            skipping = line.split("#")[0].rstrip().endswith("(")
        elif not line.startswith("from __future__"):
            keep.append(line)
    return "\n".join(keep) + "\n"


py_function = compile_cache.py_function


def sources(functions: Iterable[Any], templates: Sequence[types.ModuleType]) -> list[Path]:
    """Every source file whose compiled functions can end up in a generated module: the
    functions' and the templates', and every compiled function they call, followed through
    their globals (and attributes of modules they name)."""
    files: set[Path] = {Path(__file__), Path(jit.__file__)}
    files.update(Path(inspect.getfile(m)) for m in templates)
    roots = [f for f in functions if f is not None]
    for m in templates:
        roots.extend(v for v in vars(m).values() if hasattr(v, "py_func"))
    return sorted(files | compile_cache.reachable(roots))


def module(prefix: str, text: str, bound: dict[str, Any] | None = None,
           functions: Iterable[Any] = (), templates: Sequence[types.ModuleType] = (),
           extras: dict[str, Any] | None = None, key: Any = None,
           imports: Sequence[str] = ()) -> types.ModuleType:
    """The generated module of ``text`` (its names ``bound`` injected as ``_BOUND``), named
    ``{prefix}_{digest}`` by the digest of the text, of every source the ``functions`` and
    ``templates`` reach (:func:`sources`), of the modules ``text`` imports compiled helpers
    from (``imports``, by name) and of numba's version.

    Written once per digest and imported once per process (memoised under ``key``, if
    given); numba compiles each of its functions on first call, or loads it from its cache.
    ``extras`` become attributes of the module (kept when it is re-imported).
    """
    memo = (prefix, key)
    with _lock:
        if key is not None and memo in _modules:
            return _modules[memo]
        digest = hashlib.sha256(text.encode())
        helpers = [importlib.import_module(name) for name in imports]
        roots = [*functions, *(v for m in helpers for v in vars(m).values()
                               if hasattr(v, "py_func"))]
        for path in sources(roots, templates):  # by content as defined: a user's file
            digest.update(compile_cache.file_digest(path).encode())  # copied is the same code
        digest.update(compile_cache.frozen(roots).encode())  # the constants compiled in
        digest.update(str(getattr(jit.numba, "__version__", "")).encode())
        name = f"{prefix}_{digest.hexdigest()[:20]}"
        folder = cache_dir()
        path = folder / f"{name}.py"
        if not _holds(path, text):
            if path.exists() or path.is_symlink():  # damaged, cut short, or not a file
                warnings.warn(f"the generated module {path} was damaged; written anew",
                              compile_cache.CacheNotice, stacklevel=2)
                _remove(path)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(text)
            stamp = 1_000_000_000 + int(digest.hexdigest()[:6], 16)
            os.utime(tmp, (stamp, stamp))  # the same stamp whoever writes it: numba's key
            os.replace(tmp, path)
            with contextlib.suppress(OSError):
                prune(folder, keep=name)
        with contextlib.suppress(OSError):
            (folder / f"{name}.used").touch()
        loaded = _load(name, path, bound or {}, extras or {})
        if key is not None:
            _modules[memo] = loaded
        return loaded


def _holds(path: Path, text: str) -> bool:
    """Whether ``path`` is a file holding ``text`` (a generated file is never edited)."""
    try:
        return path.is_file() and path.read_text(errors="replace") == text
    except OSError:
        return False


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def memoised(prefix: str, key: Any) -> types.ModuleType | None:
    """The module :func:`module` loaded in this process under ``(prefix, key)``, if any (so a
    caller need not generate its text again)."""
    with _lock:
        return _modules.get((prefix, key))


def prune(folder: Path, keep: str = "", now: float | None = None) -> list[str]:
    """Remove generated modules (their file, marker and numba's cache files) unused for
    :data:`KEEP_SECONDS`, and the least recently used beyond :data:`KEEP_MODULES` that have
    not been used for an hour; never ``keep``. Returns the names removed."""
    now = time.time() if now is None else now
    used: list[tuple[float, str]] = []
    for path in folder.glob("*_*.py"):
        marker = path.with_suffix(".used")
        try:  # the marker's time, else when the file was written (its mtime is numba's stamp)
            when = marker.stat().st_mtime if marker.exists() else path.stat().st_ctime
        except OSError:
            continue
        if path.stem != keep:
            used.append((when, path.stem))
    used.sort(reverse=True)
    gone = [name for k, (when, name) in enumerate(used)
            if now - when > KEEP_SECONDS or (k >= KEEP_MODULES - 1 and now - when > 3600)]
    for name in gone:
        for path in [folder / f"{name}.py", folder / f"{name}.used",
                     *(folder / "__pycache__").glob(f"{name}.*")]:
            with contextlib.suppress(OSError):
                path.unlink()
    return gone


def _load(name: str, path: Path, bound: dict[str, Any], extras: dict[str, Any]
          ) -> types.ModuleType:
    """Import the generated file ``path`` as module ``name``, its bound names injected."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    loaded._BOUND = bound  # type: ignore[attr-defined]
    sys.modules[name] = loaded
    spec.loader.exec_module(loaded)
    for attr, value in extras.items():
        setattr(loaded, attr, value)
    return loaded


@contextlib.contextmanager
def announce_compiles(callback: Callable[[], None] | None) -> Iterator[None]:
    """Call ``callback`` once, when numba starts compiling anything inside the block.

    numba fires its ``numba:compile`` event on real compiles only (a cache
    hit loads without one), which is how a cold cache is told from a warm
    one without timing anything.
    """
    if callback is None or jit.numba is None:
        yield
        return
    from numba.core import event

    class _Announce(event.Listener):
        said = False

        def on_start(self, ev: event.Event) -> None:
            if not self.said:
                self.said = True
                callback()

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Announce()):
        yield


__all__ = ["BOUND", "announce_compiles", "cache_dir", "memoised", "module", "prune",
           "py_function", "sources", "template_text"]
