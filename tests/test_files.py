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
