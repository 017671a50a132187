"""Every example in the README and the guides runs as shown, so the documentation cannot drift.

The README and the guides under ``docs/pages/`` are written so that a
person can paste their examples: later examples use the files earlier ones
wrote under ``out/``, in whichever page wrote them. This test runs the
``bash`` and ``python`` blocks of each section (a page's ``## `` part, or
its opening) in order, in a fresh folder that holds the files other
sections wrote (made once by the commands that write them), so sections run
in parallel; each ``run.py`` command is shortened by
capping the options that make it long (steps, seeds, repetitions...), and a
command that does not exit 0 fails its section. The setup and test blocks
(installation, the test suite itself) and the server (``viz``, driven by the
browser test) are not run here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: run by CI, skippable locally (-m 'not slow')

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the pages whose examples run: the README and the guides (the generated report's commands
#: are its own sections', checked by tests/report; the API reference has no examples)
PAGES = [README, *sorted((ROOT / "docs" / "pages").glob("*.md"))]
RUN = ".venv/bin/python run.py"

#: option -> cap, per command: a value above the cap is lowered to it, a missing
#: option is added with it (what makes each command quick enough for the suite)
CAPS: dict[str, dict[str, int]] = {
    "train": {"--cycles": 3, "--seeds": 3, "--test-episodes": 50},
    "market": {"--steps": 10, "--buyers": 60, "--sellers": 60},
    "batch": {"--steps": 5, "--iterations": 1, "--processes": 1},
    "tournament": {"--repetitions": 5},
    "bench": {"--repeats": 1},
    "report": {},
}
#: flags added to every such command
FLAGS: dict[str, list[str]] = {"bench": ["--quick"], "report": ["--quick"]}
#: option -> value given when the command has none: the benchmark's two quickest sections
#: (every section's quick rows are run and checked by tests/bench/, the sections loop by
#: tests/bench/test_framework.py; all of them here again took 20-50 s)
DEFAULTS: dict[str, dict[str, str]] = {"bench": {"--only": "negmas,revision"}}
#: commands not run here, and why
SKIP = {"viz": "serves until Ctrl-C; tests/view/test_browser.py drives the server"}
#: other programs the pages show, not run here, and why
SKIP_PROGRAMS = {".venv/bin/mkdocs": "tests/test_docs.py builds the site strictly"}


def blocks(text: str) -> list[tuple[str, str]]:
    """The README's ``bash`` and ``python`` blocks, in order, without setup and test."""
    out = []
    for m in re.finditer(r"(<!-- (?:setup|test) -->\s*)?```(bash|python)\n(.*?)```", text, re.S):
        if m.group(1):
            continue
        out.append((m.group(2), m.group(3)))
    return out


def shorten(command: list[str]) -> list[str] | None:
    """The arguments of one ``run.py`` command with its long options capped (None: skip)."""
    if not command:
        return command
    name = command[0]
    if name in SKIP:
        return None
    args = list(command)
    for option, cap in CAPS.get(name, {}).items():
        if option in args:
            i = args.index(option)
            if int(args[i + 1]) > cap:
                args[i + 1] = str(cap)
        elif not any(a.startswith(option + "=") for a in args):
            args += [option, str(cap)]
    for option, value in DEFAULTS.get(name, {}).items():
        if option not in args and not any(a.startswith(option + "=") for a in args):
            args += [option, value]
    return args + [f for f in FLAGS.get(name, []) if f not in args]


def rewrite(block: str, python: str) -> str:
    """A bash block with every ``run.py`` command shortened and pointed at this checkout."""
    lines = block.replace("\\\n", " ").splitlines()
    out = []
    for line in lines:
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        if code.lstrip().startswith(tuple(SKIP_PROGRAMS)):
            out.append("true")
            continue
        if RUN not in code:
            out.append(line)
            continue
        parts = []
        for piece in re.split(r"\s(;|&&)\s", code):
            if piece in (";", "&&"):
                parts.append(piece)
                continue
            head, _, rest = piece.partition(RUN)
            args = shorten(shlex.split(rest))
            if args is None:
                parts.append("true")
                continue
            parts.append(f"{head}{shlex.quote(python)} {shlex.quote(str(ROOT / 'run.py'))} "
                         + shlex.join(args))
        out.append(" ".join(parts))
    return "\n".join(out)


def sections(text: str, page: str = "README.md") -> list[tuple[str, str]]:
    """A page cut at its ``## `` headings: (``page: title``, text) in order; the opening
    before the first heading is a section of its own."""
    parts = re.split(r"^## ", text, flags=re.M)
    out = [(f"{page}: {p.splitlines()[0].strip()}", p) for p in parts[1:]]
    return [(f"{page}: (opening)", parts[0]), *out]


def all_sections() -> list[tuple[str, str]]:
    """Every section of every page whose examples run."""
    return [s for page in PAGES for s in sections(page.read_text(), page.name)]


def all_text() -> str:
    return "\n".join(page.read_text() for page in PAGES)


#: ``out/...`` files a command writes, and files a command reads
WRITES = re.compile(r"(?:--save|--out|--plot)[ =](out/[\w./-]+)|cat > (out/[\w./-]+)")
READS = re.compile(r"(?:qlearning:|--load[ =]|evaluate |plot |--grid[ =])(out/[\w./-]+?)(?:=|\s|$)")


def code(text: str) -> str:
    return "\n".join(block for _, block in blocks(text))


def produced(text: str) -> set[str]:
    """Files the examples of ``text`` write."""
    return {a or b for a, b in WRITES.findall(code(text) or text)}


def needed(text: str) -> set[str]:
    """Files a section's examples read but do not write: earlier sections made them."""
    return set(READS.findall(code(text))) - produced(text)


def producer(name: str) -> str:
    """The line of the documentation that writes ``name`` (the first one)."""
    for line in all_text().replace("\\\n", " ").splitlines():
        if RUN in line and name in produced(line):
            return line
    raise AssertionError(f"no README command writes {name}")


#: a python block that opens with this comment is a file the reader saves, not a program
FILE_BLOCK = re.compile(r"\A# file: ([\w.-]+\.py)\n")


def run_block(kind: str, block: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    saved = FILE_BLOCK.match(block) if kind == "python" else None
    if saved:  # the reader saves it: written where the section's commands run
        (cwd / saved.group(1)).write_text(block)
        return
    if kind == "python":
        cmd = [sys.executable, "-c", block]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", rewrite(block, sys.executable)]
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"README example failed (exit {done.returncode}):\n{block}\n"
        f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-2000:]}"
    )


@pytest.fixture(scope="session")
def earlier_outputs(tmp_path_factory) -> Path:
    """The files later sections read, each made by the README command that writes it."""
    home = tmp_path_factory.mktemp("readme-outputs")
    for name in sorted(set().union(*(needed(t) for _, t in all_sections()))):
        run_block("bash", producer(name), home)
    return home


SECTIONS = [title for title, text in all_sections() if blocks(text)]


@pytest.mark.parametrize("title", SECTIONS)
def test_readme_examples_run_in_order(title, tmp_path, earlier_outputs):
    """Each section's examples, in order, in a fresh folder holding what earlier ones wrote."""
    text = dict(all_sections())[title]
    for name in needed(text):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(earlier_outputs / name, tmp_path / name)
    for kind, block in blocks(text):
        run_block(kind, block, tmp_path)


def test_every_example_is_in_a_section_and_every_read_file_is_written():
    for page in PAGES:
        text = page.read_text()
        assert sum(len(blocks(t)) for _, t in sections(text, page.name)) == len(blocks(text))
    written = produced(all_text())
    for _, section in all_sections():
        assert needed(section) <= written


@pytest.mark.parametrize("line,expected", [
    (f"{RUN} market --steps 200 --buyers 500", ["market", "--steps", "10", "--buyers", "60",
                                                "--sellers", "60"]),
    (f"{RUN} train --load t.npz --cycles 0", ["train", "--load", "t.npz", "--cycles", "0",
                                              "--seeds", "3", "--test-episodes", "50"]),
])
def test_long_commands_are_capped_not_changed(line, expected):
    rewritten = rewrite(line, "py")
    assert shlex.split(rewritten)[2:] == expected
    assert rewrite(f"{RUN} viz --port 8800", "py") == "true"
