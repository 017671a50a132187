"""Child processes that end with their parent, however the parent ends.

A batch's pool workers, a local Dask cluster and the browser view's server
are processes of their own. When the command that started them ends
normally or by Ctrl-C, it stops them itself; but a SIGKILL (or a crash that
skips cleanup) gives it no chance, and orphans would keep running, holding
the caller's terminal or pipe open. So every child watches the process that
started it: on Linux the kernel signals the child when its parent dies
(``PR_SET_PDEATHSIG``), and a watchdog thread checks that the named
ancestor is alive twice a second and ends the child if it is not (the
parent of a pool worker is a fork server, not the command, so the kernel's
signal alone is not enough). SIGTERM is turned into a normal exit in the
command, so its cleanup runs as on Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: seconds between two looks at the watched process
WATCH_INTERVAL = 0.5
#: environment variable naming the process that helper processes must not outlive
GUARD_ENV = "NEGOTIATION_GUARD_PID"


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running: it exists and is not a zombie.

    A killed process stays a zombie until its own parent reaps it, and that
    parent may be waiting for our pipes to close first; so a zombie counts
    as gone.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): existing is all we can tell
    return state not in (b"Z", b"X")


def die_with(pid: int, interval: float = WATCH_INTERVAL) -> None:
    """End this process as soon as process ``pid`` is gone (call it in the child).

    Asks the kernel for SIGTERM when the direct parent dies (Linux), and
    starts a daemon thread that ends this process when ``pid`` (the
    command, possibly a grandparent) no longer exists or this process was
    handed to another parent.
    """
    _parent_death_signal(signal.SIGTERM)
    parent = os.getppid()

    def watch() -> None:
        while alive(pid) and os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name=f"die-with-{pid}", daemon=True).start()


def quiet_resource_tracker() -> None:
    """Keep multiprocessing's resource tracker quiet when the command is killed.

    After a SIGKILL the tracker (started with this interpreter's ``-W``
    options) cleans up the pool's semaphores and warns about each: noise on
    the caller's stderr for a cleanup that went right. Call before the first
    process pool or local cluster starts.
    """
    quiet = "ignore:resource_tracker:UserWarning"
    if quiet not in sys.warnoptions:
        sys.warnoptions.append(quiet)


def preexec_die_with_parent() -> None:
    """``preexec_fn`` for subprocesses: the kernel ends the child when the parent dies; and
    the child starts with no signal blocked, whatever :func:`deferred_signals` held back in
    the parent at the fork."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    _parent_death_signal(signal.SIGTERM)


#: the signals that end a command (Ctrl-C, SIGTERM, a closed terminal)
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold back Ctrl-C, SIGTERM and SIGHUP within the block (they are delivered when it
    ends), so that starting a child cannot be cut in half: a signal in the middle of
    ``subprocess.Popen`` would leave a started child that no ``finally`` knows of."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _parent_death_signal(sig: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, int(sig), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


class Terminated(SystemExit):
    """Raised in the main thread on SIGTERM (or SIGHUP), so cleanup runs as for Ctrl-C."""


#: how deep the main thread is in :func:`compiled_code` blocks, and the signal held meanwhile
_depth = [0]
_pending: list[int] = []
#: Ctrl-Cs that arrived while a command started (:func:`guard_process`)
_arrived: list[int] = []


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(128 + signum)


def _handler(signum: int, frame: Any) -> None:
    """Every ending signal: raised at once, or when the :func:`compiled_code` block the main
    thread is in ends."""
    _taken[0] += 1
    if _depth[0] > 0:
        _pending.append(signum)
        return
    _raise_for(signum)


class _CompiledCode:
    """The context manager :func:`compiled_code` returns (a class, not a generator: it is
    entered around every compiled step, where a generator-based one cost 3.7 us)."""

    __slots__ = ()

    def __enter__(self) -> None:
        if not _depth[0] and not _installed[0]:
            _install()
        _depth[0] += 1

    def __exit__(self, *exc: object) -> None:
        _depth[0] -= 1
        if _depth[0] == 0 and _pending and threading.current_thread() is threading.main_thread():
            signum = _pending[0]
            _pending.clear()
            _raise_for(signum)


_COMPILED_CODE = _CompiledCode()
_installed = [False]


def _install() -> None:
    """Ctrl-C held within :func:`compiled_code` blocks in any process (a notebook's too), once:
    Python's own handler is replaced by :func:`_handler`, which raises as it does elsewhere."""
    _installed[0] = True
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _handler)


def compiled_code() -> contextlib.AbstractContextManager[None]:
    """Around a compiled call and its bookkeeping: Ctrl-C (or SIGTERM under
    :func:`sigterm_exits`) arriving within it is raised when the block ends, so a step
    happens whole or not at all (a notebook can go on stepping), and no exception unwinds
    through machine code (numba calls back into Python, and a command interrupted mid-step
    crashed with SIGSEGV, 4 times in 10 under load). Machine code that never returns is
    the watcher's (:func:`sigterm_exits`)."""
    return _COMPILED_CODE


def guard_process() -> None:
    """For a command-line process, from its first import on: a Ctrl-C while it starts is
    remembered, so that the command ends as :func:`sigterm_exits` begins even if a
    library's start-up swallowed the ``KeyboardInterrupt``. And, as the very last exit
    handler, the ending signals are ignored once the work is done (:func:`exit_on_signal`):
    after the exit handlers Python runs no signal handler of ours, and a signal then killed
    the process with no line and no exit code of its own."""
    atexit.register(_ignore_when_done)  # registered first: runs last
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _starting)


def _starting(signum: int, frame: Any) -> None:
    """Python's own Ctrl-C handler, remembering the signal (:func:`guard_process`)."""
    _arrived.append(signum)
    raise KeyboardInterrupt


#: seconds from an ending signal to the command's end when the main thread has not taken it
#: (machine code that never returns) or holds it in a compiled call that has not returned
STUCK_SECONDS = 2.0
#: ... and when it has taken it but the command still runs (its cleanup: a cluster closing;
#: or the signal's exception dropped where it landed)
GRACE_SECONDS = 10.0
#: ending signals the main thread's handler has taken
_taken = [0]


def _code_for(signum: int) -> int:
    return 130 if signum == signal.SIGINT else 128 + signum


def _watch(read_fd: int, line: Callable[[int], str], over: threading.Event) -> None:
    """A thread's loop: every ending signal also arrives here (Python's wakeup fd, written by
    the C-level handler even while the main thread runs machine code). The first starts a
    deadline (:func:`_deadline`); a second ends the command at once."""
    first = 0
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            data = b""
        if not data:  # the block ended: the write end is closed
            with contextlib.suppress(OSError):
                os.close(read_fd)
            return
        for signum in data:
            if signum not in ENDING_SIGNALS:
                continue
            if first:
                _end_now(signum, line)
            first = signum
            threading.Thread(target=_deadline, args=(signum, line, over), daemon=True).start()


def _deadline(signum: int, line: Callable[[int], str], over: threading.Event) -> None:
    """Unless the command's block ends first, it ends with its line and exit code after
    :data:`STUCK_SECONDS` if the main thread has not taken the signal or holds it in a
    compiled call, else after :data:`GRACE_SECONDS` (its cleanup had that long)."""
    if over.wait(STUCK_SECONDS):
        return
    taken = _taken[0] > 0 and not (_pending and _depth[0] > 0)
    if taken and over.wait(GRACE_SECONDS - STUCK_SECONDS):
        return
    _end_now(signum, line)


def _end_now(signum: int, line: Callable[[int], str]) -> None:
    """End the process from a watching thread: the command's line, its exit code."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        print(line(signum), file=sys.stderr, flush=True)
    os._exit(_code_for(signum))


@contextlib.contextmanager
def sigterm_exits(line: Callable[[int], str] | None = None) -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (exit code 143), and so does
    SIGHUP (129: the terminal closed); Ctrl-C raises ``KeyboardInterrupt``; within
    :func:`compiled_code`, when that block ends.

    ``line``: the command's line for a signal (``interrupted``, ``terminated``); with it,
    the command ends within :data:`STUCK_SECONDS` of a signal the main thread cannot take
    (a user's rule that never returns), within :data:`GRACE_SECONDS` whatever happens to
    the signal's exception, and at once on a second signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = [signal.SIGTERM, signal.SIGHUP]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # ignored stays ignored
        ours.append(signal.SIGINT)
    previous = {sig: signal.signal(sig, _handler) for sig in ours}
    over = threading.Event()
    _taken[0] = 0
    wake = None
    if line is not None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            wake = (signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False), write_fd)
        except ValueError:  # not the main thread after all
            os.close(read_fd)
            os.close(write_fd)
        else:
            threading.Thread(target=_watch, args=(read_fd, line, over), name="signal-watch",
                             daemon=True).start()
    try:
        if _arrived:  # a Ctrl-C at start-up that something swallowed: the command ends now
            signum = _arrived[0]
            _arrived.clear()
            _raise_for(signum)
        yield
    finally:
        over.set()
        if wake is not None:
            signal.set_wakeup_fd(wake[0])
            os.close(wake[1])  # the watcher reads the end and stops
        for sig, old in previous.items():
            signal.signal(sig, old)
        _arrived.clear()


#: whether the command's work is done and said (:func:`exit_on_signal`)
_done = [False]


def _ignore_when_done() -> None:
    if _done[0]:
        for sig in ENDING_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def exit_on_signal(code: int) -> None:
    """After a command's work is done and said: a Ctrl-C, SIGTERM or SIGHUP while Python shuts
    down (its exit handlers, a pool's threads) ends the process at once with the command's
    own exit code, its output flushed: never a crash report, and never ignored (a shutdown
    that hangs still stops)."""
    _done[0] = True

    def now(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe: nothing left to say
                stream.flush()
        os._exit(code)

    for sig in ENDING_SIGNALS:
        signal.signal(sig, now)
