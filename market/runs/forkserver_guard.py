"""Imported by the batch pool's fork server as it starts: it ends when the command does.

The fork server is a process multiprocessing starts for us, so we cannot
hand it a watchdog the usual way; preloading this module (see
:func:`market.runs.batch.process_pool`) makes it watch its parent, the
command, from its first moment, so a command killed while its pool is still
starting leaves nothing behind. Workers forked from the server watch the
command themselves (their pool initializer). Neither takes Ctrl-C: the command
ends them.
"""

from __future__ import annotations

import os
import signal

# Ctrl-C reaches the whole process group; the command stops its workers itself. The fork
# server ignores it from its first moment, as multiprocessing makes it do only after the
# preloads have been imported (a Ctrl-C during those imports printed their traceback), and
# the workers it forks inherit the same
signal.signal(signal.SIGINT, signal.SIG_IGN)

from market.processes import GUARD_ENV, die_with  # noqa: E402

# the command's pid, set before the pool starts: by the time this runs, a killed command
# may already have handed this process to another parent
die_with(int(os.environ.get(GUARD_ENV) or os.getppid()))
