"""Special files given where a command reads a file: refused at once in one line, exit 2.

A FIFO (or ``/dev/zero``) used to hang a command until it was killed, or (``evaluate
/dev/zero``) to eat memory; every reader now opens only a regular file of bounded size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import pytest

ROOT = Path(__file__).resolve().parents[2]


_run = cli_run.run  # a command in this process (tests/support/cli_run.py)


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
    assert len([x for x in out.stderr.strip().splitlines()
                if not x.startswith("[progress] ")]) == 1


@pytest.mark.parametrize("value", ["abc", "100000", "0"])
def test_a_bad_numba_thread_count_in_the_environment_is_one_line(value):
    env = {**os.environ, "NUMBA_NUM_THREADS": value}
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--cycles", "1"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    assert out.returncode == 2, out.stderr
    assert "NUMBA_NUM_THREADS must be an integer in [1," in out.stderr
    assert len([x for x in out.stderr.strip().splitlines()
                if not x.startswith("[progress] ")]) == 1


def test_an_evaluation_past_its_measured_cost_is_refused_up_front(tmp_path, monkeypatch,
                                                                   capsys):
    """P = 1000, T = 100 needs about 40 GB here: refused with the estimate; a table file is
    checked from its headers, before its tables are read (here on a pretend 50 MB machine)."""
    import numpy as np

    from market import limits
    from market.cli import main
    from market.game import qtable, table_files
    from market.game.rules import Protocol

    out = _run("evaluate", "--spe", "--prices", "1000", "--rounds", "100")
    assert out.returncode == 2 and "would need about" in out.stderr, out.stderr
    assert len([x for x in out.stderr.strip().splitlines()
                if not x.startswith("[progress] ")]) == 1
    pr = Protocol(101, 20)
    f = tmp_path / "big.npz"
    z = np.zeros((2, qtable.n_rows(pr), pr.n_actions))
    np.savez(f, seller=z, buyer=z, prices=np.int64(101), rounds=np.int64(20))
    monkeypatch.setattr(limits, "machine_memory", lambda: 50 * 2**20)
    monkeypatch.setattr(table_files, "load_tables", lambda *a, **k: pytest.fail("tables read"))
    assert main(["evaluate", str(f)]) == 2
    assert "evaluating P=101, T=20 would need about" in capsys.readouterr().err


def test_a_long_evaluation_says_how_long_first(capsys):
    from market.cli.evaluate_cmd import check_cost
    from market.game.rules import Protocol

    check_cost(Protocol(1000, 12), quiet=False)
    assert "evaluating P=1000, T=12: about 15 s" in capsys.readouterr().err
    check_cost(Protocol(201, 10), quiet=False)
    assert capsys.readouterr().err == ""


def test_a_table_whose_meta_holds_a_huge_integer_is_refused_naming_file_and_option(tmp_path):
    import numpy as np

    from market.game import qtable
    from market.game.rules import Protocol

    f = tmp_path / "meta.npz"
    pr = Protocol(5, 5)
    z = np.zeros((2, qtable.n_rows(pr), pr.n_actions))
    np.savez(f, seller=z, buyer=z, prices=np.int64(5), rounds=np.int64(5),
             meta=np.str_('{"seeds": ' + "9" * 5000 + "}"))
    for args, option in ((["baseline", "--seller", f"qlearning:{f}"], "--seller: "),
                         (["train", "--load", str(f), "--cycles", "0"], "--load: "),
                         (["evaluate", str(f)], "")):
        out = _run(*args)
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines() == [
            f"run.py {args[0]}: error: {option}{f}: meta holds an integer of 5,000 digits "
            "(at most 100)"]


def test_a_tournament_with_every_anac_agent_is_refused_at_once_with_its_estimate():
    """Every ANAC agent against everyone at NegMAS's speed is hours: refused in seconds,
    naming the estimate and what to lower; a small lineup is announced only when long."""
    import time

    pytest.importorskip("negmas_genius_agents")
    from strategies.negmas_agents import anac_agents

    t0 = time.perf_counter()
    out = _run("tournament", "--genius", str(len(anac_agents())), "--out", "/nonexistent/t")
    assert out.returncode == 2, out.stderr
    assert "hours on this kind of machine" in out.stderr and "--genius" in out.stderr
    assert len([x for x in out.stderr.strip().splitlines()
                if not x.startswith("[progress] ")]) == 1
    assert time.perf_counter() - t0 < 20
    from market.game.rules import Protocol
    from market.runs.tournament import genius_seconds

    assert genius_seconds(Protocol(5, 5), 100, 12, 0) == 0
    assert 60 < genius_seconds(Protocol(5, 5), 10, 12, 20) < 120  # 50 s measured


def test_a_training_past_its_measured_cost_is_refused_and_a_long_one_announced(capsys):
    out = _run("train", "--seeds", "100000", "--prices", "2", "--rounds", "1", "--cycles",
               "3000")
    assert out.returncode == 2 and "would take about 2.2 hours" in out.stderr, out.stderr
    from market.cli.train_cmd import check_cost
    from market.game.training import preset

    check_cost(preset("default", seeds=100_000, prices=2, rounds=1), quiet=False)
    assert "training 100,000 seed(s) of 150,000 episodes at P=2, T=1: about 7 minutes" in (
        capsys.readouterr().err)
