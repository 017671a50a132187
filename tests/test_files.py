"""Result files appear whole or not at all."""

import pandas as pd
import pytest

from market.files import atomic_path, write_parquet


def test_atomic_path_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash mid-write")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_keeps_the_old_file_until_the_new_one_is_complete(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("new")
        raise RuntimeError
    assert target.read_text() == "old"


def test_write_parquet_round_trip(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    path = write_parquet(df, tmp_path / "sub" / "r.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(path), df)


def test_files_get_the_usual_permissions(tmp_path):
    import os

    mask = os.umask(0o022)
    try:
        path = write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "p.parquet")
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644


# --- several files: checked up front, written all or none -------------------------------------
def test_every_output_path_is_checked_before_any_work(tmp_path):
    from market.errors import UsageError
    from market.files import check_outputs

    (tmp_path / "out" / "market.png").mkdir(parents=True)
    (tmp_path / "blocker").write_text("a file")
    check_outputs({tmp_path / "new" / "deeper" / "a.parquet": "--out"})  # made on write
    with pytest.raises(UsageError, match=r"^--out: .*out/market\.png is a directory, not a file$"):
        check_outputs({tmp_path / "out" / "model.parquet": "--out",
                       tmp_path / "out" / "market.png": "--out"})
    with pytest.raises(UsageError, match="--save: cannot write .*blocker/t.npz"):
        check_outputs({tmp_path / "blocker" / "t.npz": "--save"})
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_all_or_nothing_writes_every_file_at_the_end(tmp_path):
    from market.files import all_or_nothing, write_text

    with all_or_nothing():
        write_text("a", tmp_path / "a.txt")
        assert not (tmp_path / "a.txt").exists()  # staged, not yet in place
        write_text("b", tmp_path / "sub" / "b.txt")
    assert (tmp_path / "a.txt").read_text() == "a"
    assert (tmp_path / "sub" / "b.txt").read_text() == "b"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.txt", "b.txt", "sub"]


def test_a_failure_midway_removes_what_was_written_and_the_folders_made_for_it(tmp_path):
    from market.files import all_or_nothing, write_parquet, write_text

    (tmp_path / "kept.txt").write_text("old")
    with pytest.raises(RuntimeError, match="figure failed"), all_or_nothing():
        write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "out" / "deep" / "model.parquet")
        write_text("new", tmp_path / "kept.txt")
        raise RuntimeError("figure failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
    assert (tmp_path / "kept.txt").read_text() == "old"  # an earlier file is left as it was


def test_a_write_that_fails_names_the_users_path_not_a_temporary_file(tmp_path):
    from market.files import all_or_nothing, write_text

    (tmp_path / "out" / "summary.json").mkdir(parents=True)  # appeared after the checks
    with pytest.raises(OSError) as info, all_or_nothing():
        write_text("{}", tmp_path / "out" / "model.txt")
        write_text("{}", tmp_path / "out" / "summary.json")
    assert info.value.filename == str(tmp_path / "out" / "summary.json")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["summary.json"]
    with pytest.raises(OSError) as info:  # a single write names it too
        write_text("{}", tmp_path / "out" / "summary.json")
    assert info.value.filename == str(tmp_path / "out" / "summary.json")


def test_a_file_in_the_way_that_the_project_did_not_write_is_refused_and_kept(tmp_path):
    import cli_run  # tests/support, on pytest's pythonpath

    out = tmp_path / "out"
    out.mkdir()
    mine = out / "summary.json"
    mine.write_text("my notes")
    done = cli_run.run("market", "--steps", "2", "--buyers", "4", "--sellers", "4",
                       "--out", str(out))
    assert done.returncode == 2
    assert "summary.json exists and this project did not write it" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert mine.read_text() == "my notes" and sorted(p.name for p in out.iterdir()) == [
        "summary.json"]
    mine.unlink()  # what the project wrote, it replaces on the next run
    for _ in range(2):
        done = cli_run.run("market", "--steps", "2", "--buyers", "4", "--sellers", "4",
                           "--out", str(out))
        assert done.returncode == 0, done.stderr
    assert "summary.json" in (out / ".negotiation-market-outputs").read_text().split()


def test_a_batch_table_path_holding_another_parquet_file_is_refused(tmp_path):
    import cli_run

    other = tmp_path / "mine.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(other)
    done = cli_run.run("batch", "--param", "n_buyers=2", "--iterations", "1", "--steps", "2",
                       "--out", str(other))
    assert done.returncode == 2 and "mine.parquet exists and this project did not write it" in (
        done.stderr)
    assert pd.read_parquet(other)["a"].tolist() == [1]


def test_a_full_disk_seen_by_a_writer_that_names_no_file_names_the_users_path(tmp_path):
    """pyarrow's error for a full disk names no file ("Error writing bytes to file"): the
    error raised names the output, in the system's words."""
    import errno

    from market.files import atomic_path

    class Full(OSError):
        pass

    with pytest.raises(OSError) as info, atomic_path(tmp_path / "b.parquet"):
        raise Full(errno.ENOSPC, None)
    assert info.value.filename == str(tmp_path / "b.parquet")
    assert info.value.strerror == "No space left on device"
    assert list(tmp_path.iterdir()) == []
