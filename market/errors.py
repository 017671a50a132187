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
