"""The command line's contract: help, one-line errors with exit code 2."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, cwd=ROOT
    )


def test_help_lists_the_commands():
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("baseline", "train", "market", "bench"):
        assert command in out.stdout


def test_unknown_command_is_one_line_exit_2():
    out = run_cli("no-such-command")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("args", [["bench", "--repeats", "0"], ["bench", "--only", "nope"]])
def test_bad_values_are_one_line_exit_2(args):
    out = run_cli(*args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert args[1] in lines[0]  # the message names the parameter
