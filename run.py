#!/usr/bin/env python3
"""The project's one command line: ``python run.py --help``.

Thin on purpose: parsing, dispatch and error reporting live in
:mod:`market.cli`, where the tests reach them.
"""

import sys

from market.cli import main

if __name__ == "__main__":
    sys.exit(main())
