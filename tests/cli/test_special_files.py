"""Special files given where a command reads a file: refused at once in one line, exit 2.

A FIFO (or ``/dev/zero``) used to hang a command until it was killed, or (``evaluate
/dev/zero``) to eat memory; every reader now opens only a regular file of bounded size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("command", [
    ["evaluate", "{f}"],
    ["train", "--load", "{f}", "--cycles", "0"],
    ["market", "--seller-mix", "qlearning:{f}=1", "--steps", "1"],
    ["tournament", "--qtable", "{f}", "--out", "{d}/t"],
    ["batch", "--grid", "{f}", "--out", "{d}/b.parquet"],
    ["plot", "{f}", "--out", "{d}/p"],
])
def test_a_special_file_is_refused_in_one_line(tmp_path, special, command):
    path = "/dev/zero"
    if special == "fifo":
        path = str(tmp_path / "f")
        os.mkfifo(path)
    out = _run(*[a.format(f=path, d=tmp_path) for a in command])
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and ("FIFO" in lines[0] or "device" in lines[0]), out.stderr
    assert not any(p.name in ("t", "b.parquet", "p") for p in tmp_path.iterdir())


def test_a_fifo_among_a_batchs_parts_is_redone_not_waited_on(tmp_path):
    out = tmp_path / "r.parquet"
    args = ["batch", "--param", "n_buyers=4,6", "--steps", "3", "--out", str(out),
            "--processes", "1", "--json"]
    first = _run(*args)
    assert first.returncode == 0, first.stderr
    from market.runs.batch import PARTS_MARKER

    parts = tmp_path / "r.parts"
    parts.mkdir()
    (parts / PARTS_MARKER).write_text("")  # the project's own folder
    os.mkfifo(parts / "run-0000000.json")  # where run 0's finished row would be
    out.unlink()
    again = _run(*args)
    assert again.returncode == 0, again.stderr


def test_a_grid_nested_deep_enough_to_exhaust_recursion_is_one_line(tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text("a = " + "[" * 3000 + "1" + "]" * 3000 + "\n")
    out = _run("batch", "--grid", str(grid), "--out", str(tmp_path / "b.parquet"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_an_empty_strategy_list_is_refused_not_played(tmp_path):
    out = _run("tournament", "--strategies", ",", "--out", str(tmp_path / "t"))
    assert out.returncode == 2 and "names no strategy" in out.stderr, out.stderr
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("base", ["SAONegotiator", "ControlledSAONegotiator",
                                  "SAOPRNegotiator"])
def test_negmas_base_classes_are_refused_as_strategies(base):
    pytest.importorskip("negmas")
    out = _run("baseline", "--seller", f"negmas:{base}")
    assert out.returncode == 2, out.stderr
    assert "made no offer and accepted nothing" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["abc", "100000", "0"])
def test_a_bad_numba_thread_count_in_the_environment_is_one_line(value):
    env = {**os.environ, "NUMBA_NUM_THREADS": value}
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--cycles", "1"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    assert out.returncode == 2, out.stderr
    assert "NUMBA_NUM_THREADS must be an integer in [1," in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_an_evaluation_past_its_measured_cost_is_refused_up_front(tmp_path):
    """P = T = 300 would take over an hour here: refused with the estimate, for --spe and for
    a (small, compressed) table file alike, before anything is built or loaded."""
    import time

    import numpy as np

    out = _run("evaluate", "--spe", "--prices", "300", "--rounds", "300")
    assert out.returncode == 2 and "would take about" in out.stderr, out.stderr
    f = tmp_path / "big.npz"
    zeros = np.zeros((2 + 300 * 300, 302))
    np.savez_compressed(f, seller=zeros, buyer=zeros, prices=np.int64(300),
                        rounds=np.int64(300))
    del zeros
    t0 = time.perf_counter()
    out = _run("evaluate", str(f))
    assert out.returncode == 2 and "would take about" in out.stderr, out.stderr
    assert time.perf_counter() - t0 < 30 and len(out.stderr.strip().splitlines()) == 1


def test_a_long_evaluation_says_how_long_first():
    out = _run("evaluate", "--spe", "--prices", "201", "--rounds", "10")
    assert out.returncode == 0, out.stderr
    assert "evaluating P=201, T=10: about" in out.stderr


def test_a_training_past_its_measured_cost_is_refused_and_a_long_one_announced(capsys):
    out = _run("train", "--seeds", "100000", "--prices", "2", "--rounds", "1", "--cycles",
               "1000")
    assert out.returncode == 2 and "would take about 1.2 hours" in out.stderr, out.stderr
    from market.cli.train_cmd import check_cost
    from market.game.training import preset

    check_cost(preset("default", seeds=100_000, prices=2, rounds=1), quiet=False)
    assert "training 100,000 seed(s) of 150,000 episodes at P=2, T=1: about 11 minutes" in (
        capsys.readouterr().err)
