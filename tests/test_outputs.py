"""The outputs the docs print are the outputs the commands print.

A block of printed output in the docs that follows ``<!-- output: ARGS -->``
is what ``run.py ARGS`` prints (piped, as a reader who pastes the command into
a log would see it), and one that follows ``<!-- output: python -->`` what the
``python`` block just above it prints: every line of the block, ``...``
marking lines left out, appears in the output, in that order. A changed drawing,
table or figure fails here instead of leaving the docs behind.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: run by CI, skippable locally (-m 'not slow')

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md"))]
MARKED = re.compile(r"<!-- output: (?P<args>[^>]+?) -->\n```[a-z]*\n(?P<block>.*?)```", re.S)
#: the python block a ``<!-- output: python -->`` block follows
PYTHON_ABOVE = re.compile(r"```python\n(?P<code>(?:(?!```).)*?)```\s*\Z", re.S)


def marked() -> list[tuple[str, str, str]]:
    """Each marked block: its page, what prints it (``run.py`` arguments, or a program), and
    the block."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in MARKED.finditer(text):
            args = m["args"]
            if args == "python":
                above = PYTHON_ABOVE.search(text[:m.start()].rstrip() + "\n")
                assert above, f"{page.name}: an output of python follows no python block"
                args = f"python:{above['code']}"
            out.append((page.relative_to(ROOT).as_posix(), args, m["block"]))
    return out


BLOCKS = marked()


def test_the_docs_mark_their_printed_outputs():
    assert {page for page, _, _ in BLOCKS} >= {"docs/pages/baseline.md", "docs/pages/runs.md"}


@pytest.mark.parametrize(("page", "args", "block"), BLOCKS,
                         ids=[f"{p}:{a.splitlines()[0]}" for p, a, _ in BLOCKS])
def test_a_printed_output_is_the_command_s(page, args, block, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a pipe, not pytest's
    if args.startswith("python:"):
        cmd = [sys.executable, "-c", args.removeprefix("python:")]
        env["PYTHONPATH"] = str(ROOT)
    else:
        cmd = [sys.executable, str(ROOT / "run.py"), *shlex.split(args)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    at = 0
    for want in (line.rstrip() for line in block.splitlines()):
        if want in ("...", ""):
            continue
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            pytest.fail(f"{page}: {want!r} is not in what `run.py {args}` prints (in order)")
