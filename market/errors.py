"""The one error type for bad parameters, below every layer that checks them.

A :class:`UsageError` says what the user got wrong: its message names the
parameter or file and the allowed range. The command line prints it as one
line on stderr with exit code 2. It subclasses ``ValueError`` so that code
which checks values with plain ``ValueError`` and code that raises this one
are caught alike.
"""

from __future__ import annotations


class UsageError(ValueError):
    """Bad user input. The message names the parameter and the allowed range."""


class RunFailed(RuntimeError):
    """Work that could not finish for a reason outside the user's input (a worker killed,
    a machine gone). The message says what happened and what was kept; the command line
    prints it as one line on stderr with exit code 1."""
