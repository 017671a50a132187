"""A batch's parts folder is the project's alone, and a resume trusts only intact parts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["batch", "--param", "n_buyers=4,6", "--iterations", "2", "--steps", "3",
        "--processes", "1", "--json"]


def _batch(out: Path, *extra: str) -> subprocess.CompletedProcess:
    """The command, run in this process (tests/support/cli_run.py)."""
    return cli_run.run(*ARGS, *extra, "--out", str(out))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The batch's table, run once without damage."""
    done = _batch(tmp_path_factory.mktemp("clean") / "clean.parquet")
    assert done.returncode == 0, done.stderr
    return pd.read_parquet(Path(json.loads(done.stdout)["files"][0]))


def _interrupted(out: Path) -> Path:
    """A finished batch turned back into its parts, as a killed batch leaves them."""
    from market.runs import batch

    specs = batch.expand(batch.validate_grid({"n_buyers": [4, 6]}), 2, 0, 3)
    store = batch.PartStore(out)
    for spec in specs:
        store.save(batch.run_one(spec, False))
    return store.dir


def test_a_folder_the_project_did_not_make_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "r.parquet"
    parts = tmp_path / "r.parts"
    parts.mkdir()
    (parts / "notes.txt").write_text("mine")
    done = _batch(out)
    assert done.returncode == 2 and "was not made by run.py batch" in done.stderr
    assert [p.name for p in parts.iterdir()] == ["notes.txt"] and not out.exists()


def test_a_parts_folder_that_is_a_link_is_refused_and_nothing_written_through_it(tmp_path):
    target = tmp_path / "users"
    target.mkdir()
    (tmp_path / "r.parts").symlink_to(target)
    done = _batch(tmp_path / "r.parquet")
    assert done.returncode == 2 and "is a link" in done.stderr
    assert list(target.iterdir()) == []


def test_a_users_file_in_the_projects_parts_folder_survives_the_batch(tmp_path):
    out = tmp_path / "r.parquet"
    parts = _interrupted(out)
    (parts / "notes.txt").write_text("mine")
    done = _batch(out)
    assert done.returncode == 0, done.stderr
    assert (parts / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in parts.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("damage", ["edited", "list", "no key", "extra", "run is text",
                                    "steps 10**400"])
def test_a_damaged_part_is_run_again_and_counted(tmp_path, damage, clean):
    out = tmp_path / "r.parquet"
    parts = _interrupted(out)
    f = parts / "run-0000001.json"
    data = json.loads(f.read_text())
    if damage == "edited":
        data["row"]["efficiency"] = 0.999
    elif damage == "list":
        data = [data]
    elif damage == "no key":
        del data["key"]
    elif damage == "extra":
        data["row"]["bonus"] = 1.0
    elif damage == "run is text":
        data["row"]["run"] = "1"
    else:
        data["row"]["steps"] = 10**400
    f.write_text(json.dumps(data) if damage != "steps 10**400" else
                 json.dumps(data).replace('"steps": ' + str(10**400), '"steps": 1e400'))
    done = _batch(out)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["redone"] == 1 and summary["reused"] == 3
    pd.testing.assert_frame_equal(pd.read_parquet(out).drop(columns=["seconds"], errors="ignore"),
                                  clean.drop(columns=["seconds"], errors="ignore"))


def test_a_killed_writes_temporaries_are_removed_by_the_next_run_and_a_live_ones_kept(tmp_path):
    import os

    out = tmp_path / "m"
    out.mkdir()
    stale = out / ".model.999999999.abcd1234.parquet"  # a process that is gone
    live = out / f".model.{os.getpid()}.efgh5678.parquet"  # one that is running
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "market", "--steps", "2",
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert not stale.exists() and live.exists() and (out / "model.parquet").exists()
