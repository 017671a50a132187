#!/usr/bin/env python3
"""The project's one command line: ``python run.py --help``.

Thin on purpose: parsing, dispatch and error reporting live in
:mod:`market.cli`, where the tests reach them.
"""

import sys

try:
    from market.processes import exit_on_signal, guard_process

    guard_process()  # from here on, a Ctrl-C is never lost, even during the imports
    from market.cli import main
except KeyboardInterrupt:  # Ctrl-C while the first imports load: one line, as everywhere
    print("run.py: interrupted", file=sys.stderr)
    sys.exit(130)


if __name__ == "__main__":
    code = main()
    exit_on_signal(code)  # the work is done: a signal while Python shuts down ends it now
    sys.exit(code)
