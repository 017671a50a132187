"""Generated modules: named by their sources' digest, loaded once, pruned when unused."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from market.game import compile_cache, generated


def _fake(folder, name: str, used: float | None) -> None:
    (folder / f"{name}.py").write_text("X = 1\n")
    (folder / "__pycache__").mkdir(exist_ok=True)
    (folder / "__pycache__" / f"{name}.run-3.py311.nbi").write_bytes(b"index")
    if used is not None:
        marker = folder / f"{name}.used"
        marker.touch()
        os.utime(marker, (used, used))


def test_modules_unused_for_long_or_beyond_the_limit_are_pruned_with_their_cache(tmp_path):
    now = time.time()
    day = 24 * 3600
    _fake(tmp_path, "kernel_old", now - 30 * day)
    _fake(tmp_path, "kernel_recent", now - 1800)  # used half an hour ago
    for k in range(generated.KEEP_MODULES + 5):  # more than the limit, used hours ago
        _fake(tmp_path, f"compiled_{k:03d}", now - 2 * 3600 - k)
    _fake(tmp_path, "compiled_fresh", None)  # just written, not yet marked: kept
    gone = set(generated.prune(tmp_path, keep="compiled_052", now=now))
    assert "kernel_old" in gone and "compiled_051" in gone  # too old; beyond the limit
    assert not gone & {"kernel_recent", "compiled_fresh", "compiled_000", "compiled_052"}
    assert len(list(tmp_path.glob("*.py"))) == generated.KEEP_MODULES  # ``keep`` among them
    assert not list((tmp_path / "__pycache__").glob("kernel_old.*"))
    assert not (tmp_path / "kernel_old.used").exists()
    assert (tmp_path / "__pycache__" / "kernel_recent.run-3.py311.nbi").exists()


def test_a_module_is_written_once_per_digest_and_marked_used(tmp_path, monkeypatch):
    monkeypatch.setenv("NEGOTIATION_MARKET_CACHE", str(tmp_path))
    text = "VALUE = 41 + 1\n"
    first = generated.module("probe", text)
    second = generated.module("probe", text)
    other = generated.module("probe", "VALUE = 7\n")
    assert first.VALUE == second.VALUE == 42 and other.VALUE == 7
    folder = tmp_path / "compiled"
    assert first.__name__ == second.__name__ != other.__name__
    assert len(list(folder.glob("probe_*.py"))) == 2
    assert (folder / f"{first.__name__}.used").exists()


@pytest.mark.parametrize("damage", ["garbage", "cut short", "empty", "a folder"])
def test_a_damaged_generated_module_is_written_anew_with_one_notice(damage, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("NEGOTIATION_MARKET_CACHE", str(tmp_path))
    text = "VALUE = 41 + 1\nNAME = 'probe'\n"
    path = Path(generated.module("probe", text).__file__)
    path.unlink()
    if damage == "a folder":
        (path / "inside").mkdir(parents=True)
    else:
        path.write_text({"garbage": "VALUE = (\n", "cut short": text[:10], "empty": ""}[damage])
    with pytest.warns(compile_cache.CacheNotice, match="was damaged; written anew"):
        again = generated.module("probe", text)
    assert again.VALUE == 42 and path.read_text() == text
