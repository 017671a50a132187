"""The batch runner: grids, seeds, processes, resume, failures, Dask, CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import pandas as pd
import pytest

import market.sim.model
import strategies
from market.errors import UsageError
from market.runs import batch, jobs
from market.sim.model import MarketModel

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["n_sellers=6", "n_buyers=6,8", "buyer_mix.zi-c=0,0.5"]


def small_specs(iterations: int = 2, seed: int = 11, steps: int = 8) -> list[batch.RunSpec]:
    grid = batch.validate_grid(batch.parse_param_options(SMALL))
    return batch.expand(grid, iterations, seed, steps)


# --- grids -------------------------------------------------------------------------------------
def test_param_options_parse_and_coerce_by_the_models_signature():
    grid = batch.parse_param_options(["n_buyers=50,100", "buyer_mix.qlearning=0,0.25,1",
                                      "redraw=true,false", "first=seller"])
    assert grid == {"n_buyers": [50, 100], "buyer_mix.qlearning": [0, 0.25, 1],
                    "redraw": [True, False], "first": ["seller"]}
    checked = batch.validate_grid(grid)
    assert checked["buyer_mix.qlearning"] == [0.0, 0.25, 1.0]
    assert all(isinstance(v, float) for v in checked["buyer_mix.qlearning"])
    assert checked["n_buyers"] == [50, 100]


def test_expansion_counts_indices_and_seeds():
    grid = batch.validate_grid({"n_buyers": [5, 6], "rounds": [3, 5, 8]})
    specs = batch.expand(grid, iterations=3, seed=4, steps=10)
    assert len(specs) == 2 * 3 * 3
    assert [s.run for s in specs] == list(range(18))
    assert specs[4].point == 1 and specs[4].iteration == 1
    assert specs[4].param_dict == {"n_buyers": 5, "rounds": 5}
    assert len({s.seed for s in specs}) == 18
    # a run's seed depends on the batch seed and its index only
    other = batch.expand(batch.validate_grid({"n_buyers": [7]}), 18, 4, 99)
    assert [s.seed for s in other] == [s.seed for s in specs]
    assert batch.expand(grid, 3, 5, 10)[0].seed != specs[0].seed


@pytest.mark.parametrize("grid, needle", [
    ({"nope": [1]}, "nope"),
    ({"rounds": [3.5]}, "rounds"),
    ({"rounds": ["abc"]}, "rounds"),
    ({"redraw": [1]}, "redraw"),
    ({"buyer_mix.qlearning": [1.5]}, "buyer_mix.qlearning"),
    ({"buyer_mix.qlearning": [-0.1]}, "buyer_mix.qlearning"),
    ({"buyer_mix.qlearning": ["x"]}, "buyer_mix.qlearning"),
    ({"buyer_mix.nope": [0.5]}, "nope"),
    ({"buyer_mix.qlearning:missing.npz": [0.5]}, "missing.npz"),
    ({"buyer_mix.zi-c": [0.6], "buyer_mix.qlearning": [0.2, 0.5]}, "sum to at most 1"),
    ({"buyer_mix": [0.5]}, "buyer_mix"),
    ({"value_range": [1]}, "value_range"),
    ({"seed": [1]}, "seed"),
    ({"n_buyers": [10, 6_000_000]}, "n_buyers must be an integer in [1, 5000000]"),
    ({"prices": [5, 2000]}, "prices must be an integer in [2, 1000]"),
    ({"discount": [float("nan")]},
     "discount must be a number in (0, 1] (1, or at least 1e-09 from it) or none (got nan)"),
    ({"breakdown": [float("inf")]},
     "breakdown must be a number in [0, 1) (0, or at least 1e-09 from it) (got inf)"),
    ({"engine": ["fast"]}, "engine must be one of auto, compiled, lockstep (got 'fast')"),
])
def test_bad_grids_name_the_parameter(grid, needle):
    with pytest.raises(UsageError, match=re.escape(needle)):
        batch.validate_grid(grid)


def test_the_engine_can_be_swept_and_the_tables_agree():
    """How a model runs is not one of its parameters, but a grid may set it (the market's
    check took it for an unknown parameter); both engines give the same numbers."""
    assert batch.validate_grid({"engine": ["compiled", "lockstep"]})["engine"] == [
        "compiled", "lockstep"]


def test_every_grid_point_meets_the_markets_caps_before_any_run():
    """The market command's caps, the same words: a learner population too large for memory."""
    grid = {"n_buyers": [100, 1_000_000], "buyer_mix.qlearning": [0, 1], "prices": [300],
            "rounds": [20]}
    with pytest.raises(UsageError) as err:
        batch.validate_grid(grid)
    msg = str(err.value)
    assert msg.startswith("the market") and "would need about" in msg and "memory" in msg
    assert "prices/rounds" in msg and msg.endswith("(at n_buyers=1000000, "
                                                   "buyer_mix.qlearning=1.0, prices=300, "
                                                   "rounds=20)")


def test_mix_rule_fills_the_rest_with_the_fill_strategy():
    kw = batch.model_kwargs({"buyer_mix.qlearning": 0.25, "n_buyers": 10})
    assert kw == {"n_buyers": 10, "buyer_mix": {"qlearning": 0.25, "averaging": 0.75}}
    kw = batch.model_kwargs({"seller_mix.zi-c": 0.0, "seller_mix.averaging": 0.25,
                             "seller_mix.hardliner": 0.5})
    assert kw["seller_mix"] == {"averaging": 0.5, "hardliner": 0.5}  # zero share dropped
    assert batch.model_kwargs({"buyer_mix.qlearning": 1.0})["buyer_mix"] == {"qlearning": 1.0}
    kw = batch.model_kwargs({"buyer_mix.qlearning": 0.5}, fill="zi-c")
    assert kw["buyer_mix"] == {"qlearning": 0.5, "zi-c": 0.5}


def test_a_strategy_at_share_0_stays_in_a_revising_market():
    """Mutation can bring it in, as in the market command ("list one at share 0")."""
    kw = batch.model_kwargs({"seller_mix.hardliner": 0.5, "seller_mix.boulware": 0.0,
                             "revision": "imitate", "mutation": 1.0})
    assert kw["seller_mix"] == {"hardliner": 0.5, "boulware": 0.0, "averaging": 0.5}
    model = MarketModel(n_sellers=20, n_buyers=20, period=2, revision_rate=1.0, seed=1,
                        **{k: v for k, v in kw.items()})
    for _ in range(6):
        model.step()
    assert (model.datacollector.get_model_vars_dataframe()["share.seller.boulware"] > 0).any()


def test_toml_grid_with_tables_and_scalars(tmp_path):
    f = tmp_path / "grid.toml"
    f.write_text('n_buyers = [50, 100]\nrounds = 5\n"seller_mix.zi-c" = [0, 0.5]\n'
                 "[buyer_mix]\nqlearning = [0, 0.5, 1]\n")
    grid = batch.load_grid_toml(f)
    assert grid == {"n_buyers": [50, 100], "rounds": [5], "seller_mix.zi-c": [0, 0.5],
                    "buyer_mix.qlearning": [0, 0.5, 1]}
    bad = tmp_path / "bad.toml"
    bad.write_text("n_buyers = [50,\n")
    with pytest.raises(UsageError, match="TOML"):
        batch.load_grid_toml(bad)


# --- running -----------------------------------------------------------------------------------
def test_same_results_with_one_and_two_processes(tmp_path):
    specs = small_specs()
    one = batch.run_batch(specs, tmp_path / "one.parquet", processes=1, per_step=True)
    two = batch.run_batch(specs, tmp_path / "two.parquet", processes=2, per_step=True)
    pd.testing.assert_frame_equal(one.table, two.table)
    pd.testing.assert_frame_equal(one.steps, two.steps)
    table = pd.read_parquet(tmp_path / "two.parquet")
    pd.testing.assert_frame_equal(table, one.table)
    assert list(table["run"]) == list(range(8)) and table["error"].isna().all()
    for col in ("seed", "n_buyers", "buyer_mix.zi-c", "efficiency", "mean_price",
                "earnings.buyer.averaging", "earnings.buyer.zi-c"):
        assert col in table.columns
    # per-step data: one row per collected step (the initial state included) for every run
    steps = pd.read_parquet(batch.steps_path(tmp_path / "two.parquet"))
    assert steps.groupby("run").size().tolist() == [9] * 8
    assert not batch.parts_dir(tmp_path / "two.parquet").exists()  # cleaned up once written


class Interrupt(Exception):
    """Stands for Ctrl-C in the middle of a batch."""


def test_resume_skips_finished_runs_and_gives_the_same_table(tmp_path, monkeypatch):
    specs = small_specs()
    ref = batch.run_batch(specs, tmp_path / "ref.parquet", processes=1).table

    out = tmp_path / "out.parquet"

    def stop_after_three(outcome, done, total):
        if done == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        batch.run_batch(specs, out, processes=1, on_result=stop_after_three)
    assert not out.exists()  # never a half-written table
    assert len(list(batch.parts_dir(out).glob("run-*.json"))) == 3

    # (a grid is checked against the real model's signature, before it is patched)
    grid = batch.validate_grid(batch.parse_param_options(["n_sellers=7", "n_buyers=6,8",
                                                          "buyer_mix.zi-c=0,0.5"]))
    changed = batch.expand(grid, 2, 11, 8)
    built = []

    class Counting(market.sim.model.MarketModel):
        def __init__(self, *args, **kwargs):
            built.append(kwargs["seed"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(market.sim.model, "MarketModel", Counting)
    res = batch.run_batch(specs, out, processes=1)
    assert (res.reused, res.ran) == (3, 5)
    assert sorted(built) == sorted(s.seed for s in specs[3:])
    pd.testing.assert_frame_equal(res.table, ref)

    # a finished table is itself reused: nothing runs again
    built.clear()
    again = batch.run_batch(specs, out, processes=1)
    assert built == [] and again.reused == 8
    pd.testing.assert_frame_equal(again.table, ref)

    # a changed grid point is not mistaken for a finished run
    built.clear()
    assert batch.run_batch(changed, out, processes=1).ran == 8 and len(built) == 8


def saved_table(path: Path, prices: int = 5, rounds: int = 5) -> str:
    """A zero Q-table file for the game P x T."""
    import numpy as np

    from market.game import qtable
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    protocol = Protocol(prices, rounds)
    zeros = np.zeros((2, qtable.n_rows(protocol), protocol.n_actions))
    save_tables(path, TablePair(protocol, zeros, zeros))
    return str(path)


def test_a_failing_run_is_recorded_and_the_others_go_on(tmp_path):
    table = saved_table(tmp_path / "corrupt.npz")
    key = f"buyer_mix.qlearning:{table}"
    grid = batch.validate_grid({"n_buyers": [5], "n_sellers": [5], key: [0, 0.5]})
    Path(table).write_bytes(b"not a zip archive")  # damaged after the grid was checked
    res = batch.run_batch(batch.expand(grid, 2, 1, 5), tmp_path / "r.parquet", processes=2)
    table = pd.read_parquet(tmp_path / "r.parquet")
    assert res.failed == 2
    bad = table[table[key] == 0.5]
    assert bad["error"].str.contains("corrupt.npz").all() and bad["efficiency"].isna().all()
    good = table[table[key] == 0]
    assert good["error"].isna().all() and good["efficiency"].between(0, 1).all()


def test_dask_local_cluster_equals_the_process_pool(tmp_path):
    pytest.importorskip("distributed")
    specs = small_specs(iterations=1)
    pool = batch.run_batch(specs, None, processes=2, per_step=True)
    dask = batch.run_batch(specs, tmp_path / "d.parquet", processes=1, scheduler="local",
                           per_step=True)
    pd.testing.assert_frame_equal(pool.table, dask.table)
    pd.testing.assert_frame_equal(pool.steps, dask.steps)


# --- command line ------------------------------------------------------------------------------
def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``run.py batch ARGS`` in this process (tests/support/cli_run.py)."""
    return cli_run.run("batch", *args, cwd=ROOT)


def test_cli_writes_the_table_and_json(tmp_path):
    out = tmp_path / "b.parquet"
    p = run_cli("--param", "n_buyers=4,6", "--param", "n_sellers=4", "--iterations", "2",
                "--steps", "5", "--processes", "1", "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["runs"] == 4 and data["failed"] == 0 and data["files"] == [str(out)]
    assert len(pd.read_parquet(out)) == 4


def cli_in_process(capsys, *args: str) -> tuple[int, str, str]:
    """``run.py batch ARGS`` in this process (no interpreter start-up): code, stdout, stderr."""
    from market.cli import main

    try:
        code = main(["batch", *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("args, needle", [
    (["--param", "nope=1"], "nope"),
    (["--param", "rounds=x"], "rounds"),
    (["--param", "buyer_mix.qlearning=2"], "buyer_mix.qlearning"),
    (["--param", "n_buyers=5,-3"], "n_buyers"),  # right type, out of range: caught up front
    (["--param", "first=bogus"], "first"),
    (["--processes", "0"], "--processes"),
    (["--grid", "missing.toml"], "--grid"),
    (["--param", "n_buyers=4", "--scheduler", "127.0.0.1:9", "--connect-timeout", "0.5"],
     "--scheduler"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, args, needle):
    code, _, err = cli_in_process(capsys, *args, "--steps", "2",
                                  "--out", str(tmp_path / "x.parquet"))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


def test_cli_bad_toml_is_exit_2(tmp_path, capsys):
    f = tmp_path / "g.toml"
    f.write_text("rounds = [3, \n")
    code, _, err = cli_in_process(capsys, "--grid", str(f), "--out", str(tmp_path / "x.parquet"))
    assert code == 2 and "TOML" in err and len(err.strip().splitlines()) == 1


def test_cli_exits_1_when_runs_failed(tmp_path, capsys, monkeypatch):
    def broken(self, *args):
        raise RuntimeError("the machine went away")

    for how in ("step", "run"):  # a run steps through run(), a period at a time
        monkeypatch.setattr(market.sim.model.MarketModel, how, broken)
    code, out, _ = cli_in_process(capsys, "--param", "n_buyers=5", "--iterations", "1",
                                  "--steps", "2", "--processes", "1",
                                  "--out", str(tmp_path / "f.parquet"))
    assert code == 1 and "run 0 failed: RuntimeError: the machine went away" in out


@pytest.mark.parametrize("name, content", [
    ("text.npz", b"hello, not a zip archive"),
    ("p7.npz", None),  # a valid table for another game
])
def test_a_bad_table_in_a_mix_is_refused_before_any_run(tmp_path, capsys, name, content):
    path = tmp_path / name
    if content is None:
        saved_table(path, prices=7)
    else:
        path.write_bytes(content)
    out = tmp_path / "r.parquet"
    code, stdout, err = cli_in_process(capsys, "--param", f"buyer_mix.qlearning:{path}=0.5",
                                       "--iterations", "1", "--steps", "2", "--processes", "1",
                                       "--out", str(out))
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(path) in err
    assert ("P=7, T=5 but the game has P=5, T=5" if content is None else "not a .npz") in err
    assert list(tmp_path.iterdir()) == [path]  # no table, no part file


@pytest.mark.parametrize("args, needle", [
    (["--param", "n_buyers=99999999999999999999999"], "n_buyers must be an integer in"),
    (["--param", "prices=1000000", "--param", "rounds=1000000"], "prices must be an integer in"),
    (["--param", "clock=true", "--param", "clock_buckets=-1"], "clock_buckets must be an integer"),
    (["--param", "clock=true", "--param", "clock_buckets=1000000000"],
     "clock_buckets must be an integer in [1, 1000000]"),
    (["--param", "n_buyers=" + ",".join(map(str, range(1, 1001))), "--iterations", "1000000"],
     "1,000 grid point(s) x 1,000,000 iterations make 1,000,000,000 runs (at most 1,000,000)"),
])
def test_sizes_beyond_the_caps_are_refused_before_any_run(tmp_path, capsys, args, needle):
    code, _, err = cli_in_process(capsys, *args, "--steps", "2", "--processes", "1",
                                  "--out", str(tmp_path / "r.parquet"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_grid_of_ten_billion_points_is_refused_at_once(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    grid.write_text("".join(f"{k} = {list(range(2, 102))}\n"
                            for k in ("n_buyers", "n_sellers", "period", "prices", "rounds")))
    code, _, err = cli_in_process(capsys, "--grid", str(grid), "--out", str(tmp_path / "r.parquet"))
    assert code == 2 and "the grid has 10,000,000,000 points" in err
    assert "at most 100,000" in err and sorted(tmp_path.iterdir()) == [grid]


def test_the_memory_of_a_run_is_checked_against_the_machines(tmp_path, capsys, monkeypatch):
    import market.limits

    monkeypatch.setattr(market.limits, "machine_memory", lambda: 2**30)
    code, _, err = cli_in_process(capsys, "--param", "n_buyers=2000000", "--steps", "100",
                                  "--out", str(tmp_path / "r.parquet"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "of memory (at most 0.8 GiB, 80% of this machine's 1.0 GiB)" in err
    assert list(tmp_path.iterdir()) == []


def test_the_table_and_its_steps_are_written_both_or_neither(tmp_path, monkeypatch):
    import market.files

    out = tmp_path / "r.parquet"
    real = market.files.write_parquet

    def fails_on_steps(df, path):
        if Path(path) == batch.steps_path(out):
            raise OSError(28, "No space left on device", str(path))
        return real(df, path)

    monkeypatch.setattr(batch, "write_parquet", fails_on_steps)
    with pytest.raises(OSError, match="No space left"):
        batch.run_batch(small_specs(iterations=1), out, processes=1, per_step=True)
    assert not out.exists()  # the table was staged with its steps, and removed with them
    assert len(list(batch.parts_dir(out).glob("run-*.json"))) == 4  # every run kept to resume


def test_a_finished_table_is_not_reused_for_another_fill_or_a_dropped_parameter(tmp_path):
    out = tmp_path / "r.parquet"
    grid = batch.validate_grid(batch.parse_param_options(["n_buyers=6", "rounds=1"]))
    first = batch.run_batch(batch.expand(grid, 2, 3, 6), out, processes=1)
    assert first.ran == 2

    # dropping rounds=1 must not pass the old rows off as rounds at its default
    dropped = batch.validate_grid(batch.parse_param_options(["n_buyers=6"]))
    again = batch.run_batch(batch.expand(dropped, 2, 3, 6), out, processes=1)
    assert (again.reused, again.ran) == (0, 2)

    # the same grid with another --fill is another batch
    mix = batch.validate_grid(batch.parse_param_options(["n_buyers=6"]), fill="hardliner")
    other = batch.run_batch(batch.expand(mix, 2, 3, 6, fill="hardliner"), out, processes=1)
    assert (other.reused, other.ran) == (0, 2)


def test_a_server_that_is_not_a_dask_scheduler_fails_in_bounded_time(tmp_path):
    """A loopback listener that accepts and never answers: one line, exit 2, no hang."""
    import contextlib
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(server.accept()[0])  # accept and stay silent

    threading.Thread(target=accept, daemon=True).start()
    try:
        p = subprocess.run(
            [sys.executable, str(ROOT / "run.py"), "batch", "--param", "n_buyers=4",
             "--steps", "2", "--out", str(tmp_path / "x.parquet"),
             "--scheduler", f"127.0.0.1:{port}", "--connect-timeout", "1"],
            capture_output=True, text=True, cwd=ROOT, timeout=60,
        )
    finally:
        server.close()
        for conn in held:
            conn.close()
    assert p.returncode == 2
    said = [x for x in p.stderr.strip().splitlines() if not x.startswith("[progress] ")]
    assert len(said) == 1 and "--scheduler" in p.stderr
    assert not (tmp_path / "x.parquet").exists()


def _resumed_with(tmp_path, plant) -> None:
    """Two runs resumed from a parts folder of the project's own whose first part is what
    ``plant(path)`` puts there: both run again, and the table is the reference's."""
    specs = small_specs()[:2]
    out = tmp_path / "r.parquet"
    ref = batch.run_batch(specs, tmp_path / "ref.parquet", processes=1).table
    parts = batch.parts_dir(out)
    parts.mkdir()
    (parts / batch.PARTS_MARKER).write_text("")  # the project's own folder
    plant(parts / "run-0000000.json")
    res = batch.run_batch(specs, out, processes=1)
    assert (res.reused, res.ran) == (0, 2)
    pd.testing.assert_frame_equal(res.table, ref)


@pytest.mark.parametrize("content", ["[1]", '{"key": 1}', '{"row": 5}', "[" * 100_000, "\xff"])
def test_a_damaged_part_file_is_run_again(tmp_path, content):
    _resumed_with(tmp_path, lambda path: path.write_text(content))


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_part_replaced_by_something_else_is_run_again_and_nothing_deleted(tmp_path, kind):
    def plant(path) -> None:
        if kind == "folder":
            path.mkdir()
            (path / "keep.txt").write_text("mine")
        else:
            os.mkfifo(path)

    _resumed_with(tmp_path, plant)
    aside = list(tmp_path.rglob("run-0000000.json.set-aside-*"))
    assert len(aside) == 1 and (kind == "fifo" or (aside[0] / "keep.txt").read_text() == "mine")


def test_common_seeds_give_every_point_the_same_markets():
    grid = batch.validate_grid(batch.parse_param_options(["n_buyers=6", "common_wallet=false,true",
                                                          "n_sellers=6"]))
    plain = batch.expand(grid, 3, 7, 5)
    common = batch.expand(grid, 3, 7, 5, common_seeds=True)
    assert [s.seed for s in common[:3]] == [s.seed for s in common[3:]]  # by iteration
    assert len({s.seed for s in plain}) == 6  # otherwise every run its own
    assert [s.seed for s in common[:3]] == [s.seed for s in plain[:3]]  # point 0 unchanged
    # without teams a common wallet is a label only: under common seeds the runs are equal
    res = batch.run_batch(common, None, processes=1)
    t = res.table.sort_values(["common_wallet", "iteration"])
    a, b = (t[t["common_wallet"] == v].reset_index(drop=True) for v in (False, True))
    assert a["efficiency"].equals(b["efficiency"]) and a["mean_price"].equals(b["mean_price"])


def test_a_file_a_run_reads_that_changed_is_read_again_never_reused(tmp_path):
    """Results stand for their inputs' content, not their paths: retrain the table a grid
    names, and neither the finished table's rows nor a stored part are reused."""
    def train(seed: int) -> None:
        r = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--episodes", "200",
                            "--cycles", "2", "--seed", str(seed), "--save",
                            str(tmp_path / "Q.npz")], capture_output=True, text=True,
                           cwd=tmp_path, timeout=300)
        assert r.returncode == 0, r.stderr

    train(1)
    grid = batch.validate_grid({f"buyer_mix.qlearning:{tmp_path / 'Q.npz'}": [0.5, 1.0]})
    out = tmp_path / "b.parquet"
    first = batch.run_batch(batch.expand(grid, 2, 0, 10), out, processes=1)
    again = batch.run_batch(batch.expand(grid, 2, 0, 10), out, processes=1)
    assert (first.ran, again.reused) == (4, 4)
    train(2)
    specs = batch.expand(grid, 2, 0, 10)
    assert specs[0].inputs != first.table.attrs["batch"]["inputs"]
    redone = batch.run_batch(specs, out, processes=1)
    assert (redone.reused, redone.ran) == (0, 4)
    store = batch.PartStore(out)  # a part stored for the old file is not this run's either
    store.save(batch.run_one(batch.expand(grid, 2, 0, 10)[0]))
    train(3)
    assert store.load(batch.expand(grid, 2, 0, 10)[0], False) is None


RULE_IMPORTING = '''
from helper_{tag} import LEVEL
from strategies.rule_based import RuleBased


class Reaches(RuleBased):
    name = "reaches-helper-{tag}"

    @staticmethod
    def target(turn, rng):
        return max(turn.lo, min(turn.hi, LEVEL))
'''


@pytest.mark.parametrize("form", ["FILE.py:Class", "package.module:Class"])
def test_a_rule_s_finished_runs_are_keyed_by_every_file_of_the_user_s_it_imports(
        form, tmp_path, monkeypatch):
    """A finished run stands for its rule's whole file set: editing a helper the rule imports
    (or the module of a ``package.module:Class`` rule) is never reused."""
    tag = "file" if form == "FILE.py:Class" else "module"
    package = tmp_path / f"keyed_rules_{tag}"  # names of this test's own, left nowhere after
    package.mkdir()
    (package / "__init__.py").write_text("")
    rule = RULE_IMPORTING.replace("{tag}", tag)
    (package / "rules.py").write_text(rule)
    helper = tmp_path / f"helper_{tag}.py"
    helper.write_text("LEVEL = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    name = (f"{package / 'rules.py'}:Reaches" if form == "FILE.py:Class"
            else f"{package.name}.rules:Reaches")
    kwargs = {"buyer_mix": {name: 1.0}}
    try:
        before = dict(jobs.input_files(kwargs))
        assert set(before) == {str(package / "rules.py"), str(helper)}
        helper.write_text("LEVEL = 7\n")
        assert dict(jobs.input_files(kwargs))[str(helper)] != before[str(helper)]
        (package / "rules.py").write_text(rule + "\n")
        assert dict(jobs.input_files(kwargs))[str(package / "rules.py")] != before[
            str(package / "rules.py")]
    finally:  # what the rule brought in, gone: another test's modules of these names are its own
        for module in (package.name, f"{package.name}.rules", helper.stem):
            sys.modules.pop(module, None)
        strategies.STRATEGIES.pop(f"reaches-helper-{tag}", None)


def test_the_printed_table_shows_grid_values_as_a_person_reads_them():
    """``5000000`` read as ``5e+06`` under ``:g``; whole numbers get separators, fractions
    stay as given."""
    import numpy as np

    from market.cli.batch_cmd import _key

    assert [_key(v) for v in (5_000_000, np.int64(2_500_000), 500, 0.25, np.float64(0.1),
                              "cda", True)] == [
        "5,000,000", "2,500,000", "500", "0.25", "0.1", "cda", "True"]
