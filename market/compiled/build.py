"""Compiling as a build step: machine code lives in a folder named by what it was compiled from.

numba caches a function's machine code beside its own source and checks only
that file's time stamp, so code it inlines from another file can change
unseen. Here nothing is trusted by time stamp: every cache lives in one folder
per *build*, ``<root>/<build digest>``, and an edit starts another folder.

- **The build digest** (:func:`package_digest`): the sha256 of the package's
  compiled sources (every file of ``market`` and ``strategies`` that compiles,
  and every file of the package they import) and of numba's, numpy's and
  Python's versions. It is chosen before anything compiles; numba's stock
  ``cache=True`` does the rest, in ``<folder>/numba``.
- **Generated modules** (:func:`module`: the engines, each strategy's own
  module) are files in ``<folder>/modules`` named by the digest of their text
  and of the users' files they compile in.
- **A user's files** (:func:`user_digest`): a rule's file and every file it
  imports, directly or not, outside the standard library, site-packages and
  the package, read when its class is defined. A generated module holding a
  user's rule is named by that digest too, so an edit to any of those files
  compiles anew. A user's own ``njit(cache=True)`` functions outside a rule
  compile in each process (the generated modules that call them are cached).
- **Trust**: numba loads its cache files as code, so a folder is used only
  if it is a folder (not a link), this user's, and nobody else may write to
  it or to a folder above it (as ssh treats its keys), and everything it
  holds is a plain file or folder of this user's that nobody else may write
  (:func:`foreign`); nothing is ever ``chmod``-ed. Otherwise one note, and
  everything compiles in memory for this run.
- **Pruning**: a build folder unused for :data:`KEEP_DAYS` is removed when a
  new one is made; only folders this module made (named by a digest, holding
  its marker) are ever touched.

Coarse on purpose: any edit of the package's compiled sources compiles the
package's modules again, and any edit of a user's files the modules holding
that user's rules. :func:`build` is the one way an entry point is compiled:
a first call on tiny arguments, said on stderr the first time only.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import inspect
import marshal
import os
import re
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from market.compiled import internals
from market.processes import compiled_code

#: the folder holding the package's two top-level packages
PACKAGE = Path(__file__).resolve().parents[2]
#: the package's source folders
SOURCES = (PACKAGE / "market", PACKAGE / "strategies")
#: a build folder unused for this many days is removed when another is made
KEEP_DAYS = 14
#: the file that marks a build folder as this project's (pruning touches no other folder)
MARKER = ".negotiation-market-build"

#: a line of a template replaced by generated definitions
BOUND = "# bound when generated"

_lock = threading.RLock()
_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w, ()*]+)|import\s+([\w., ]+))",
                     re.MULTILINE)
#: what a file that compiles holds
_COMPILES = ("njit", "@intrinsic", "@overload")


# --- what code is compiled from ----------------------------------------------------------------
def _outside() -> tuple[str, ...]:
    """Folders whose files are never a user's: the standard library and site-packages."""
    paths = sysconfig.get_paths()
    return tuple({str(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib", "purelib",
                                                          "platlib") if k in paths})


def _is_package(path: Path) -> bool:
    return any(path.is_relative_to(folder) for folder in SOURCES)


def _imports(path: Path, package: str) -> Iterable[str]:
    """The module names ``path``'s import lines name (``from a import b`` gives ``a`` and
    ``a.b``: ``b`` may be a module)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    for found in _IMPORT.finditer(text):
        source, names, plain = found.groups()
        if plain:
            yield from (n.split(" as ")[0].strip() for n in plain.split(",") if n.strip())
            continue
        with contextlib.suppress(ImportError, ValueError):
            base = importlib.util.resolve_name(source, package) if source.startswith(".") \
                else source
            yield base
            for name in names.strip("() ").split(","):
                name = name.split(" as ")[0].strip()
                if name and name != "*":
                    yield f"{base}.{name}" if base else name


def _spec(name: str) -> Any:
    """The spec of module ``name`` as loaded, or as found on the path without importing."""
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__spec__", None)
    parent, _, _ = name.rpartition(".")
    where = None
    if parent:
        above = _spec(parent)
        where = getattr(above, "submodule_search_locations", None)
        if where is None:
            return None
    try:
        return importlib.machinery.PathFinder.find_spec(name, where)
    except (ImportError, ValueError, AttributeError):
        return None


def module_file(name: str) -> Path | None:
    """The source file of module ``name``, without importing it (a regular file only: a
    FIFO in its place is never read)."""
    spec = _spec(name) if name else None
    file = getattr(spec, "origin", None)
    if not file or not file.endswith(".py") or not Path(file).is_file():
        return None
    return Path(file).resolve()


def _package_file(name: str) -> Path | None:
    """The package's file of module ``name`` (found by its name alone: quick)."""
    if name.split(".")[0] not in ("market", "strategies"):
        return None
    base = PACKAGE.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def file_set(start: Iterable[Path], within: Callable[[Path], bool],
             find: Callable[[str], Path | None] = module_file) -> list[Path]:
    """``start`` and every file they import, directly or not, that ``within`` keeps
    (``find``: a module's file by its name)."""
    seen: set[Path] = set()
    todo = [Path(p).resolve() for p in start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        package = _package_name(path)
        for name in _imports(path, package):
            file = find(name)
            if file is not None and file not in seen and within(file):
                todo.append(file)
    return sorted(seen)


def _package_name(path: Path) -> str:
    """The package a file of the project belongs to (for its relative imports)."""
    if _is_package(path):
        return ".".join(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    for module in list(sys.modules.values()):
        if getattr(module, "__file__", None) == str(path):
            return getattr(module, "__package__", "") or ""
    return ""


def _digest(paths: Iterable[Path], *extra: str) -> str:
    h = hashlib.sha256()
    for path in paths:
        try:
            h.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            h.update(b"unreadable")
    for text in extra:
        h.update(text.encode())
    return h.hexdigest()


@cache
def package_digest() -> str:
    """The build digest: the package's compiled sources (the files that compile and the
    package files they import) and numba's, numpy's and Python's versions."""
    import numpy

    compiling = [p for folder in SOURCES for p in sorted(folder.rglob("*.py"))
                 if any(word in p.read_text(errors="replace") for word in _COMPILES)]
    files = file_set(compiling, _is_package, _package_file)
    numba = internals.numba
    return _digest(files, getattr(numba, "__version__", "none"), numpy.__version__,
                   sys.version)[:16]


_pinned: dict[Path, str] = {}


def pin(path: Path | str) -> None:
    """Read the digest of a user's file set now (:func:`user_digest`), as its code is defined:
    an edit later in this process's life must not name the code already in memory."""
    path = Path(path).resolve()
    if _is_package(path):
        return
    _pinned[path] = _digest(user_files(path))[:16]


def user_files(path: Path | str) -> list[Path]:
    """A user's file set: ``path`` and every file it imports, directly or not, outside the
    standard library, site-packages and the package (what names its compiled code, and
    what a batch's finished run is keyed by: :func:`market.runs.jobs.input_files`)."""
    outside = _outside()

    def users(file: Path) -> bool:
        return not _is_package(file) and not str(file).startswith(outside)

    return file_set([Path(path)], users)



def user_digest(functions: Iterable[Any]) -> str:
    """The digest of the users' files these functions come from (each file's file set, as
    pinned when its code was defined), "" when all are the package's. A function with no
    file to read (typed at a prompt) is named by its own code."""
    parts = []
    for f in functions:
        py = getattr(f, "py_func", f)
        try:
            path = Path(inspect.getfile(py)).resolve()
        except TypeError:
            continue
        if _is_package(path) or path.is_relative_to(folder()):
            continue
        if not path.is_file():
            parts.append(_code_digest(py))
            continue
        if path not in _pinned:
            pin(path)
        parts.append(_pinned[path])
    return "-".join(sorted(set(parts)))


def _code_digest(py: Any) -> str:
    code = getattr(py, "__code__", None)
    try:
        data = marshal.dumps(code) if code is not None else repr(py).encode()
    except ValueError:  # a constant marshal cannot write
        data = code.co_code
    return hashlib.sha256(data).hexdigest()[:16]


# --- where compiled code lives -------------------------------------------------------------------
def root() -> Path:
    """Where build folders live: ``$NEGOTIATION_MARKET_CACHE``, else
    ``$XDG_CACHE_HOME/negotiation-market``, else ``~/.cache/negotiation-market``."""
    base = os.environ.get("NEGOTIATION_MARKET_CACHE")
    if base:
        return Path(base).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "negotiation-market"


def untrusted(path: Path) -> str:
    """Why ``path`` cannot hold compiled code, or "" if it can: it is (or is made) a folder,
    not a link, owned by this user, writable by this user and by nobody else; and no folder
    above it lets another user swap it (ssh's rule: each is this user's or root's, and
    nobody else may write to it unless it is sticky, as ``/tmp`` is)."""
    try:
        path = Path(os.path.abspath(path))
        for above in (p for p in path.parents if p.exists()):  # before making anything
            up = above.stat()
            if up.st_uid not in (0, os.getuid()) or (
                    up.st_mode & 0o022 and not up.st_mode & stat.S_ISVTX):
                return f"{above} may be changed by another user"
        with internals.private_writes():  # folders above it made too: this user's alone
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as exc:
        return f"{path} cannot be made ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    if st.st_uid != os.getuid():
        return f"{path} is owned by another user"
    if st.st_mode & 0o022:
        return f"{path} may be written by others"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} cannot be written"
    return ""


def foreign(path: Path) -> str:
    """Why what ``path`` holds cannot be loaded as code, or "" if it can: every file and
    folder in it, at any depth, is a plain file or folder (no link, no pipe), this user's,
    and nobody else may write to it. A folder that was once open to others may hold what
    they planted then; once the folder chain is closed (:func:`untrusted`), nobody else can
    add anything, so one look when a process first uses the folder is enough."""
    todo = [path]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError as exc:
            return f"{path} cannot be read ({exc.strerror or exc})"
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile (a concurrent prune): nothing to load
            if stat.S_ISDIR(st.st_mode):
                todo.append(Path(entry.path))
            elif not stat.S_ISREG(st.st_mode):
                return f"{entry.path} is not a plain file"
            if st.st_uid != os.getuid():
                return f"{entry.path} is owned by another user"
            if st.st_mode & 0o022:
                return f"{entry.path} may be written by others"
    return ""


_chosen: list[Path | None] = []


def folder() -> Path:
    """This build's folder, ``<root>/<build digest>`` (else the same under
    ``$TMPDIR/negotiation-market-UID``); when neither can be trusted, a private folder of
    this process, removed at exit, with one note, and nothing is cached."""
    with _lock:
        if not _chosen:
            _chosen.append(_choose())
        found = _chosen[0]
        return found if found is not None else _private()


def cached() -> bool:
    """Whether numba may cache here (a trusted build folder was found)."""
    folder()
    return _chosen[0] is not None


def _choose() -> Path | None:
    digest = package_digest()
    fallback = Path(tempfile.gettempdir()) / f"negotiation-market-{os.getuid()}"
    reasons = []
    for base in (root(), fallback):
        why = untrusted(base) or untrusted(base / digest) or foreign(base / digest)
        if not why:
            if reasons:  # the folder asked for was refused: say where the cache went
                internals.note(f"the cache folder cannot be trusted ({reasons[0]}); using "
                               f"{base}")
            here = base / digest
            fresh = not (here / MARKER).exists()
            with contextlib.suppress(OSError), internals.private_writes():
                (here / MARKER).touch()
            if fresh:
                with contextlib.suppress(OSError):
                    prune(base)
            return here
        reasons.append(why)
    internals.note(f"no cache folder can be trusted ({'; '.join(reasons)}); compiling in "
                   "memory for this run")
    return None


_own: list[Path] = []


def _private() -> Path:
    if not _own:
        path = Path(tempfile.mkdtemp(prefix="negotiation-market-run-"))
        atexit.register(shutil.rmtree, path, True)
        _own.append(path)
    return _own[0]


def prune(base: Path, now: float | None = None) -> list[str]:
    """Remove the build folders in ``base`` unused for :data:`KEEP_DAYS` (their marker's
    time); only folders named by a digest and holding the marker. Returns their names."""
    now = time.time() if now is None else now
    gone = []
    for path in base.iterdir():
        marker = path / MARKER
        if not re.fullmatch(r"[0-9a-f]{16}", path.name) or path.is_symlink():
            continue
        try:
            old = now - marker.stat().st_mtime > KEEP_DAYS * 86400
        except OSError:
            continue
        if old and path.lstat().st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path.name)
    return gone


def numba_folder(f: Any) -> str | None:
    """numba's cache folder for compiled function ``f``: the build's, for the package's
    functions and the generated modules'; None (compiled in each process) for a user's own,
    and when no folder can be trusted."""
    try:
        path = Path(inspect.getfile(f)).resolve()
    except TypeError:
        return None
    here = folder()
    if not cached() or not (_is_package(path) or path.is_relative_to(here)):
        return None
    return str(here / "numba")


# --- generated modules ---------------------------------------------------------------------------
_modules: dict[tuple[Any, ...], types.ModuleType] = {}


def template_text(module: types.ModuleType) -> str:
    """A template's source without its stand-in imports (a line marked :data:`BOUND`, or a
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


def memoised(prefix: str, key: Any) -> types.ModuleType | None:
    """The module :func:`module` loaded in this process under ``(prefix, key)``, if any."""
    return _modules.get((prefix, key))


def module(prefix: str, text: str, bound: Mapping[str, Any] | None = None,
           users: Iterable[Any] = (), key: Any = None,
           extras: Mapping[str, Any] | None = None) -> types.ModuleType:
    """The generated module of ``text`` (``bound``: objects it reads as ``_BOUND``), in this
    build's folder, named ``{prefix}_{digest}`` by its text, the functions ``bound`` names
    (module and name: their sources are the build's) and the users' files of the functions
    ``users`` (:func:`user_digest`); written once, imported once per process
    (under ``key``, if given). ``extras`` become its attributes."""
    memo = (prefix, key)
    with _lock:
        if key is not None and memo in _modules:
            return _modules[memo]
        digest = hashlib.sha256(text.encode())
        for name, value in sorted((bound or {}).items()):  # what each bound name is
            py = getattr(value, "py_func", value)
            digest.update(f"{name}={py.__module__}.{py.__qualname__}".encode())
        digest.update(user_digest(users).encode())
        name = f"{prefix}_{digest.hexdigest()[:20]}"
        where = folder() / "modules"
        where.mkdir(mode=0o700, exist_ok=True)
        path = where / f"{name}.py"
        if not _holds(path, text):
            if path.exists() or path.is_symlink():
                internals.note(f"the generated module {path} was damaged; written anew")
                _remove(path)
            tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            with internals.private_writes():
                tmp.write_text(text)
            stamp = 1_000_000_000 + int(digest.hexdigest()[:6], 16)
            os.utime(tmp, (stamp, stamp))  # the same stamp whoever writes it: numba's key
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        loaded._BOUND = dict(bound or {})  # type: ignore[attr-defined]
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
        for attr, value in (extras or {}).items():
            setattr(loaded, attr, value)
        if key is not None:
            _modules[memo] = loaded
        return loaded


def _holds(path: Path, text: str) -> bool:
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


# --- the one way to compile ----------------------------------------------------------------------
def build(module: types.ModuleType, calls: Mapping[str, Callable[[], Any]],
          announce: Callable[[], None] | None = None) -> None:
    """Compile (or load from the cache) the entries ``calls`` names of a generated module, by
    calling each (``calls[entry]()`` makes the call on tiny arguments). ``announce`` is
    called first when this build has not made them before (its marker files); one process
    builds a module at a time (a file lock), so a second waits and loads.

    A Ctrl-C or SIGTERM meanwhile is held until the compile returns
    (:func:`~market.processes.compiled_code`; the command's watcher ends it after its
    deadline if the compile goes on): numba's code cache calls back into Python from C, and
    a ``KeyboardInterrupt`` raised in such a callback is printed as ignored and lost (the
    command went on and exited 0)."""
    built: set[str] = module.__dict__.setdefault("_built", set())
    todo = [entry for entry in calls if entry not in built]
    if not todo:
        return
    where = folder() / "built"
    where.mkdir(mode=0o700, exist_ok=True)
    markers = [where / f"{module.__name__}.{entry}" for entry in todo]
    with compiled_code(), _locked(where / f"{module.__name__}.lock"):
        if announce is not None and not all(m.exists() for m in markers):
            announce()
        for entry, marker in zip(todo, markers, strict=True):
            calls[entry]()
            built.add(entry)
            if cached():
                with contextlib.suppress(OSError), internals.private_writes():
                    marker.touch()


@contextlib.contextmanager
def _locked(path: Path) -> Any:
    """An exclusive lock on ``path`` between processes (released when one ends anyway)."""
    try:
        with internals.private_writes():
            handle = open(path, "a")  # noqa: SIM115 - held across the block
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


__all__ = ["BOUND", "build", "cached", "file_set", "folder", "memoised", "module",
           "numba_folder", "package_digest", "pin", "prune", "root", "template_text",
           "untrusted", "user_digest"]
