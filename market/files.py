"""Writing result files so that a crash or a bad value never leaves half a file, or half a set.

Everything goes to a temporary name in the destination folder and is renamed
into place only once complete (``os.replace`` is atomic on one filesystem).

A command that writes several files does it in two steps:

1. before any work, :func:`check_outputs` checks every path it will write
   (not a folder, in a folder that exists or can be created, writable), so
   a bad path is refused in one line naming the user's path and option;
2. the writes go inside :func:`all_or_nothing`: every file written through
   this module in the block is staged beside its destination and they are
   renamed into place together when the block ends; if anything fails
   midway, the staged files, any file already renamed and the folders the
   block created are removed, and the error names the user's path, never a
   temporary name.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from market.errors import UsageError
from market.processes import alive


# --- checks, before any work ---------------------------------------------------------------
def check_output_path(path: str | os.PathLike[str] | None, option: str) -> None:
    """Fail before any long work if the file ``path`` cannot be written (a directory, no
    permission). ``option`` names the path in the message."""
    if path is None:
        return
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise UsageError(f"{option}: {os.fspath(path)} is a directory, not a file")
    parent = os.path.dirname(p)
    while not os.path.exists(parent):  # folders that do not exist yet are created on write
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write {os.fspath(path)} ({parent} is not a "
                         "writable folder)")
    _NAMED.add(p)
    if os.path.lexists(p) and not written_here(Path(p)):
        raise UsageError(f"{option}: {os.fspath(path)} exists and this project did not write "
                         f"it (it is not listed in {MANIFEST} beside it); move it away or "
                         f"choose another path")


# --- what this project wrote: replaced only if listed ---------------------------------------
#: the file in an output folder listing the outputs this project wrote there, a name a line:
#: a file in the way of an output is replaced only if it is listed
MANIFEST = ".negotiation-market-outputs"
#: the most bytes of a manifest read
MANIFEST_MAX = 2**20
#: the outputs a command named and checked (:func:`check_output_path`): what is listed once
#: written (a command's own working files, a batch's parts, are the project's by their place)
_NAMED: set[str] = set()


def written_here(dest: Path) -> bool:
    """Whether this project wrote ``dest`` (its folder's :data:`MANIFEST` lists it)."""
    try:
        listed = read_regular(dest.parent / MANIFEST, MANIFEST_MAX, "manifest")
    except (OSError, ValueError):
        return False
    return dest.name in listed.decode("utf-8", "replace").splitlines()


def _remember(written: list[Path]) -> None:
    """List those of ``written`` that a command named as its outputs in their folders'
    manifests (each replaced whole, as any output)."""
    by_folder: dict[Path, list[str]] = {}
    for dest in written:
        if os.path.abspath(dest) in _NAMED:
            by_folder.setdefault(dest.parent, []).append(dest.name)
    for folder, names in by_folder.items():
        manifest = folder / MANIFEST
        try:
            old = read_regular(manifest, MANIFEST_MAX, "manifest").decode("utf-8", "replace")
        except (OSError, ValueError):
            old = ""
        listed = old.splitlines()
        new = [n for n in dict.fromkeys(names) if n not in listed]
        if not new:
            continue
        fd, tmp = tempfile.mkstemp(prefix=f"{MANIFEST}.", dir=folder)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write("".join(f"{n}\n" for n in (*listed, *new)))
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, manifest)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def check_output_dir(path: str | os.PathLike[str] | None, option: str) -> None:
    """Fail before any long work if the folder ``path`` cannot be created or written."""
    if path is None:
        return
    p = os.path.abspath(os.fspath(path))
    if os.path.exists(p) and not os.path.isdir(p):
        raise UsageError(f"{option} must be a folder (got the file {os.fspath(path)!r})")
    probe = p
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe) or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write in {os.fspath(path)} ({probe} is not writable)")


def check_outputs(paths: Mapping[str | os.PathLike[str], str]) -> None:
    """Check every file a command will write (path -> the option that names it), up front."""
    for path, option in paths.items():
        check_output_path(path, option)


# --- staging: several files all together or none ---------------------------------------------
@dataclass
class _Stage:
    """Files written in an :func:`all_or_nothing` block, waiting to be renamed into place."""

    pending: dict[Path, Path] = field(default_factory=dict)  # destination -> staged file
    created: list[Path] = field(default_factory=list)  # folders made for them, outermost first


_STAGE: contextvars.ContextVar[_Stage | None] = contextvars.ContextVar("stage", default=None)


@contextlib.contextmanager
def all_or_nothing() -> Iterator[None]:
    """Files written through this module inside the block appear together at its end, or none.

    On an error (in the block, or while renaming) every file of the block
    is removed, along with the folders made for them, and the error is
    raised again (an ``OSError`` naming the destination, not a temporary
    file). Blocks nest: an inner block joins the outer one.
    """
    if _STAGE.get() is not None:
        yield
        return
    stage = _Stage()
    token = _STAGE.set(stage)
    try:
        yield
    except BaseException:
        _STAGE.reset(token)
        _discard(stage, [])
        raise
    _STAGE.reset(token)
    done: list[Path] = []
    for dest, tmp in stage.pending.items():
        try:
            os.replace(tmp, dest)
        except OSError as exc:
            _discard(stage, done)
            raise _named(exc, dest) from None
        done.append(dest)
    _remember(done)


def _discard(stage: _Stage, renamed: list[Path]) -> None:
    for path in [*renamed, *stage.pending.values()]:
        with contextlib.suppress(OSError):
            path.unlink()
    for folder in reversed(stage.created):  # innermost first; only if nothing else is in it
        with contextlib.suppress(OSError):
            folder.rmdir()


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, outermost first."""
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


def _named(exc: OSError, dest: Path) -> OSError:
    """The same error, naming the user's path instead of a temporary file (or none), in the
    system's words for its errno where the writer gave its own."""
    words = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return OSError(exc.errno, words, os.fspath(dest))


def remove_stale_temporaries(dest: Path) -> list[Path]:
    """Remove the temporaries of ``dest`` (``.NAME.PID.XXXX.EXT``, see :func:`atomic_path`)
    whose process is gone; returns them."""

    gone = []
    pattern = re.compile(re.escape(f".{dest.stem}.") + r"(\d+)\.[A-Za-z0-9_]+"
                         + re.escape(dest.suffix))
    with contextlib.suppress(OSError):
        for f in dest.parent.iterdir():
            m = pattern.fullmatch(f.name)
            if m and not alive(int(m.group(1))) and f.is_file() and not f.is_symlink():
                with contextlib.suppress(OSError):
                    f.unlink()
                    gone.append(f)
    return gone


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it to ``path`` on success.

    The temporary name keeps the suffix so that libraries choosing a format
    from it (matplotlib, pyarrow, numpy) behave as for the real name, and
    carries this process's id (``.NAME.PID.XXXX.EXT``): the temporaries of
    ``path`` left by a process that was killed mid-write are removed here,
    those of a process still running are left alone. Inside
    :func:`all_or_nothing` the rename waits for the end of the block.
    """
    dest = Path(path)
    stage = _STAGE.get()
    created = _make_parents(dest.parent)
    if stage is not None:
        stage.created.extend(created)
    remove_stale_temporaries(dest)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.stem}.{os.getpid()}.", suffix=dest.suffix,
                                   dir=dest.parent)
    except OSError as exc:
        if stage is None:
            _discard(_Stage(created=created), [])
        raise _named(exc, dest) from None
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
    try:
        yield tmp_path
        if stage is not None:
            old = stage.pending.pop(dest, None)  # written twice: the last one stands
            if old is not None:
                old.unlink(missing_ok=True)
            stage.pending[dest] = tmp_path
        else:
            os.replace(tmp_path, dest)
            _remember([dest])
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if stage is None:
            _discard(_Stage(created=created), [])
        if isinstance(exc, OSError) and (exc.filename is None or _mentions(exc, tmp)):
            raise _named(exc, dest) from None  # a writer's error names no file (pyarrow's)
        raise


def _mentions(exc: OSError, path: str) -> bool:
    names = (exc.filename, exc.filename2)
    return any(isinstance(n, str | os.PathLike) and os.fspath(n) == path for n in names)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_parquet(df: Any, path: str | os.PathLike[str]) -> Path:
    """Write a pandas DataFrame to Parquet atomically."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    return Path(path)


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 120) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=dpi, bbox_inches="tight", format="png")
    finally:
        plt.close(fig)
    return Path(path)


def write_text(text: str, path: str | os.PathLike[str]) -> Path:
    """Write ``text`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


# --- reading: regular files of bounded size only -------------------------------------------------
def shown(text: object, limit: int = 120) -> str:
    """Untrusted text (a file name, an array name) as it may appear in a one-line message:
    escaped (no terminal control sequences) and cut to ``limit`` characters."""
    out = ascii(str(text))[1:-1]
    return out if len(out) <= limit else out[: limit - 3] + "..."


def open_regular(path: str | os.PathLike[str], max_bytes: int, what: str = "file") -> Any:
    """Open ``path`` for reading in binary, only if it is a regular file of at most
    ``max_bytes``; ``ValueError`` naming it otherwise.

    The file is opened without blocking and checked on the open descriptor
    (``fstat``), so a FIFO, a device such as ``/dev/zero``, a socket or a
    folder is refused before a single byte is read, and a file swapped
    between a check and the open cannot slip through.
    """

    p = os.fspath(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ValueError(f"{shown(p)}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{shown(p)}: is a directory, not a {what}") from None
    except OSError as exc:
        raise ValueError(f"{shown(p)}: cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ValueError(f"{shown(p)}: is a directory, not a {what}")
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
                    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket"
                    if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise ValueError(f"{shown(p)}: is {kind}, not a {what}" if kind.startswith("a ")
                             else f"{shown(p)}: {kind}, not a {what}")
        if st.st_size > max_bytes:
            raise ValueError(f"{shown(p)}: {st.st_size:,} bytes, more than a {what} may hold "
                             f"({max_bytes:,})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: bytes of a data file a command reads whole (a grid, a results table, a run's part)
DATA_FILE_MAX = 4 * 2**30


def read_regular(path: str | os.PathLike[str], max_bytes: int = DATA_FILE_MAX,
                 what: str = "file") -> bytes:
    """The bytes of ``path``, if it is a regular file of at most ``max_bytes`` (see
    :func:`open_regular`); ``ValueError`` naming it otherwise."""
    with open_regular(path, max_bytes, what) as fh:
        return fh.read()
