"""``run.py COMMAND ...`` run in the test's own process, its output captured.

A subprocess costs a second of imports (numpy, pandas, numba) per command;
the suite ran hundreds. :func:`run` calls the same entry point as ``run.py``
(:func:`market.cli.main`) and returns what a subprocess would: the exit code
and the text written to stdout and stderr. Tests that need a real process
(signals, start-up, the interpreter's own flags) start one themselves.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path
from unittest import mock


def run(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess:
    """``run.py ARGS`` in this process (in ``cwd``, with only ``env`` as its environment
    and ``stdin`` as its input, if given), as a completed process."""
    from market.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        # the environment as it was, whatever the command set (e.g. a pool's guard pid)
        stack.enter_context(mock.patch.dict(os.environ, env or {}, clear=env is not None))
        stack.enter_context(mock.patch("sys.stdin", io.StringIO(stdin or "")))
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(["run.py", *args], code, stdout.getvalue(),
                                       stderr.getvalue())


__all__ = ["run"]
