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

import _thread
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


#: how deep the main thread is in compiled code now (:func:`compiled_code`), and the signals
#: that arrived meanwhile, to be raised when it returns
_compiled = [0]
_pending: list[int] = []


class _CompiledCode:
    """The context manager :func:`compiled_code` returns (a class, not a generator: it is
    entered around every compiled step, and a generator-based one cost 3.7 us of a small
    market's 104 us step against 0.4 us)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _compiled[0] += 1

    def __exit__(self, *exc: object) -> None:
        _compiled[0] -= 1
        if _compiled[0] == 0:
            _raise_pending()


_COMPILED_CODE = _CompiledCode()


def compiled_code() -> contextlib.AbstractContextManager[None]:
    """Around a call into compiled code: Ctrl-C or SIGTERM arriving within it is raised when
    it returns. Raised inside, the signal's exception unwinds through machine code (numba
    calls back into Python) that does not always check for one: a command interrupted
    mid-step crashed with SIGSEGV, 4 times in 10 under load.

    A first call that is still compiling is Python code, and is interrupted at once (a
    compile takes seconds). Where Python drops the exception (a callback from LLVM's C
    code, a weak reference's callback), the signal is delivered again a moment later
    (:func:`_dropped`)."""
    return _COMPILED_CODE


def _raise_pending() -> None:
    """Raise the signal held meanwhile, if any (once)."""
    if _pending and threading.current_thread() is threading.main_thread():
        signum = _pending[0]
        _pending.clear()
        _raise_for(signum)


def _compiling(frame: Any) -> bool:
    """Whether the interrupted Python code is numba's compiler (a first call compiling, or
    loading from the cache)."""
    seen = 0
    while frame is not None and seen < 400:
        code = frame.f_code
        if code.co_name == "_compile_for_args" and "numba" in code.co_filename:
            return True
        frame, seen = frame.f_back, seen + 1
    return False


#: how soon a signal whose exception Python dropped is delivered again
RETRY_SECONDS = 0.05


def _again(signum: int) -> None:
    """Deliver ``signum`` to the main thread again shortly (if the command still runs under
    :func:`sigterm_exits` by then): a real signal, so it also wakes a sleep or a wait. A
    bare thread, not a ``Timer``: this runs inside a signal handler."""

    def deliver() -> None:
        time.sleep(RETRY_SECONDS)
        if _handling[0] > 0 or _guarded[0]:
            signal.pthread_kill(threading.main_thread().ident or 0, signum)

    _thread.start_new_thread(deliver, ())


def _dropped(unraisable: Any, previous: Any) -> None:
    """``sys.unraisablehook`` under :func:`sigterm_exits`: a signal's exception raised where
    Python can only print and drop it (a finaliser, a weak reference's callback, a callback
    from C such as LLVM's) is delivered again instead, so the signal is never lost (a batch
    interrupted at start-up ran on, and a report while its kernel loaded)."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        _again(signal.SIGINT)
    elif isinstance(exc, Terminated) and isinstance(exc.code, int):
        _again(exc.code - 128)
    else:
        previous(unraisable)


#: how many :func:`sigterm_exits` blocks the main thread is in
_handling = [0]
#: whether this process is the command line's, from its first import to its work's end
_guarded = [False]


def guard_process() -> None:
    """For a command-line process, from its first import on (before :func:`sigterm_exits`
    takes over): a Ctrl-C whose exception Python drops is delivered again (a batch
    interrupted while importing, inside the import system's lock callback, ran on). And, as
    the very last exit handler, the ending signals are ignored once the work is done
    (:func:`exit_on_signal`): after the exit handlers Python runs no signal handler of ours
    (it resets them while it tears the modules down), and a signal then killed the
    process with no line and no exit code of its own."""
    _guarded[0] = True
    atexit.register(_ignore_when_done)  # registered first: runs last
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: _dropped(unraisable, hook)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _starting)


#: Ctrl-Cs that arrived while the command started (:func:`guard_process`)
_arrived: list[int] = []


def _starting(signum: int, frame: Any) -> None:
    """Python's own Ctrl-C handler, remembering the signal: if whatever it lands in swallows
    the ``KeyboardInterrupt``, the command still ends as :func:`sigterm_exits` begins (a
    ``train`` interrupted 0.3 s after its start ran on, once in a few suite runs under load).

    Landing in the import system's own code (an import that C code asked for, such as a
    Cython module's), the signal is delivered again in a moment instead: raised there, it
    reaches that C code, which may print it as a traceback above the command's line and
    go on (seen once in a batch interrupted 0.3 s after its start)."""
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        _again(signum)
        return
    _arrived.append(signum)
    raise KeyboardInterrupt


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(128 + signum)


#: seconds a signal may wait for the main thread to take it (compiled code does not check
#: for one); then the command ends anyway, with its line and exit code
STUCK_SECONDS = 2.0
#: signals the main thread's handler has taken, and signals seen arriving (:func:`_watch`)
_taken = [0]


def _code_for(signum: int) -> int:
    return 130 if signum == signal.SIGINT else 128 + signum


def _watch(read_fd: int, line: Callable[[int], str]) -> None:
    """A thread's loop: every ending signal also arrives here (Python's wakeup fd, written by
    the C-level handler even while the main thread runs machine code). If the main thread
    has not taken it within :data:`STUCK_SECONDS`, or has only held it back inside a compiled
    call that has not returned (a user's rule that loops forever), the command ends now:
    its one line, its exit code. A second signal meanwhile ends it at once."""
    seen = 0
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
            if signum in ENDING_SIGNALS:
                seen += 1
                if not _taken_in_time(seen):
                    _end_now(signum, line)


def _taken_in_time(seen: int) -> bool:
    """Whether the main thread takes the ``seen``-th signal (and is not holding it inside a
    compiled call) within :data:`STUCK_SECONDS`; False at once for a second signal while the
    first is held."""
    deadline = time.monotonic() + STUCK_SECONDS
    while time.monotonic() < deadline:
        held = bool(_pending) and _compiled[0] > 0
        if held and seen > 1:
            return False
        if _taken[0] >= seen and not held:
            return True
        time.sleep(0.02)
    return False


def _end_now(signum: int, line: Callable[[int], str]) -> None:
    """End the process from the watching thread: the command's line, its exit code."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        print(line(signum), file=sys.stderr, flush=True)
    os._exit(_code_for(signum))


@contextlib.contextmanager
def sigterm_exits(line: Callable[[int], str] | None = None) -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (exit code 143), and so does
    SIGHUP (129: the terminal closed); Ctrl-C raises ``KeyboardInterrupt``. A signal that
    arrives within :func:`compiled_code` is raised when the compiled call returns.

    ``line``: the command's line for a signal (``interrupted``, ``terminated``); with it, a
    signal the main thread cannot take within :data:`STUCK_SECONDS` (machine code that does
    not return, such as a user's rule that loops forever) ends the process from a watching
    thread with that line and the signal's exit code, and so does a second signal while
    the first waits for a compiled call."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        _taken[0] += 1
        if _compiled[0] > 0 and not _compiling(frame):  # raised when the compiled call returns
            _pending.append(signum)
            return
        _raise_for(signum)  # if Python drops it where it lands, _dropped delivers it again

    ours = [signal.SIGTERM, signal.SIGHUP]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # ignored stays ignored
        ours.append(signal.SIGINT)
    previous = {sig: signal.signal(sig, handler) for sig in ours}
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: _dropped(unraisable, hook)
    _handling[0] += 1
    wake = None
    if line is not None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        try:
            wake = (signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False), read_fd,
                    write_fd)
        except ValueError:  # not the main thread after all
            os.close(read_fd)
            os.close(write_fd)
        else:
            _taken[0] = 0
            threading.Thread(target=_watch, args=(read_fd, line), name="signal-watch",
                             daemon=True).start()
    try:
        if _arrived:  # a Ctrl-C at start-up that something swallowed: the command ends now
            _arrived.clear()
            raise KeyboardInterrupt
        yield
    finally:
        if wake is not None:
            signal.set_wakeup_fd(wake[0])
            os.close(wake[2])  # the watcher reads the end and stops; it closes nothing itself
        _handling[0] -= 1
        sys.unraisablehook = hook
        for sig, old in previous.items():
            signal.signal(sig, old)


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

    _guarded[0] = False
    _done[0] = True

    def now(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed pipe: nothing left to say
                stream.flush()
        os._exit(code)

    for sig in ENDING_SIGNALS:
        signal.signal(sig, now)
