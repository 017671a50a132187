#!/usr/bin/env python3
"""The project's one command line: ``python run.py --help``.

Thin on purpose: parsing, dispatch and error reporting live in
:mod:`market.cli`, where the tests reach them.
"""

import signal
import sys

try:
    from market.cli import main
except KeyboardInterrupt:  # Ctrl-C while the first imports load: one line, as everywhere
    print("run.py: interrupted", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    code = main()
    # the command's work is done and said: a Ctrl-C or SIGTERM while Python shuts down (its
    # exit handlers, a pool's threads) must not turn it into a crash report
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(code)
