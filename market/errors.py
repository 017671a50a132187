"""The one error type for bad parameters, below every layer that checks them.

A :class:`UsageError` says what the user got wrong: its message names the
parameter or file and the allowed range. The command line prints it as one
line on stderr with exit code 2. It subclasses ``ValueError`` so that code
which checks values with plain ``ValueError`` and code that raises this one
are caught alike.

:class:`CompileError` and :class:`RunFailed` are the other ways a command
ends early without a traceback: the machine cannot compile the training
kernel (numba missing or failing; exit code 2), or work could not finish
for a reason outside the user's input (exit code 1). Neither is a bad
parameter, so both are kept apart from ``ValueError``.

:class:`Notice` is not an error: a warning category for what a user should
know while the work goes on (the market runs on its slower path); Python
code sees warnings, and the command line prints each as one plain line.
"""

from __future__ import annotations


class UsageError(ValueError):
    """Bad user input. The message names the parameter and the allowed range."""


class StrategyFailed(UsageError):
    """A strategy's own code failed while it played (a user's rule raised, or played an
    action the rules forbid). The message names the strategy and what went wrong; the
    command line prints it as one line on stderr with exit code 2."""


def failed(who: str, move: int | None, exc: BaseException) -> StrategyFailed:
    """The error of ``who`` (a strategy's name, or names) whose code raised ``exc``."""
    at = "" if move is None else f" at move {move}"
    text = " ".join(str(exc).split())
    return StrategyFailed(f"the rule of {who} failed{at}: {type(exc).__name__}"
                          + (f": {text}" if text else ""))


class CompileError(RuntimeError):
    """This machine cannot compile (or load) a compiled kernel: numba missing or failing.

    Not the user's input, but as final: the command line prints it as one
    line on stderr with exit code 2.
    """


class RunFailed(RuntimeError):
    """Work that could not finish for a reason outside the user's input (a worker killed,
    a machine gone). The message says what happened and what was kept; the command line
    prints it as one line on stderr with exit code 1."""


class Notice(UserWarning):
    """Something the user should know while the work goes on; the command line prints it as
    one line on stderr (``run.py COMMAND: note: ...``), once per command."""


def signal_under(exc: BaseException) -> BaseException | None:
    """The Ctrl-C (``KeyboardInterrupt``) or SIGTERM (a ``SystemExit``) behind ``exc``, if any.

    A signal that arrives while numba's compiled code runs makes its
    dispatcher hand back a result with the signal's exception set; Python then
    raises a ``SystemError`` caused by it (one per layer of numba's that the
    signal crossed). Code that records or retries
    failures (``except Exception``) must not take that for a failure of its
    own: it is the user stopping the command.
    """
    seen = 0
    while isinstance(exc, SystemError) and exc.__cause__ is not None and seen < 8:
        exc, seen = exc.__cause__, seen + 1  # numba's layers: each wraps the one below
        if not isinstance(exc, Exception):
            return exc
    return None


def reraise_signal(exc: BaseException) -> None:
    """Raise the signal's own exception if ``exc`` stands for one (:func:`signal_under`)."""
    cause = signal_under(exc)
    if cause is not None:
        raise cause from None
