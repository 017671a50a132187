"""Generated modules: named by their sources' digest, loaded once, pruned when unused."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from market.compiled import compile_cache, generated


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


PROBE = '''
import sys, warnings
warnings.simplefilter("always")
from market.compiled import generated
text = ("from market.compiled.jit import njit\\n\\n\\n@njit(cache=True)\\n"
        "def f(x):\\n    return x + 1\\n")
print(generated.module("probe", text).f(1), generated.cache_dir())
'''


class _Planted:
    """A pickle that, when numba unpickles it, leaves a marker file (a planted payload)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (Path.touch, (self.marker,))


@pytest.mark.skipif(os.getuid() != 0, reason="planting a folder of another user needs root")
def test_a_cache_folder_another_user_can_write_is_never_loaded(tmp_path):
    """The fallback folder in $TMPDIR, made by another user with mode 777 and holding a
    planted numba index for the very module a run needs: the run compiles in memory with one
    note, and the payload never runs."""
    import pickle
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("NUMBA_CACHE_DIR", None)
    good = tmp_path / "good"
    first = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           env={**env, "NEGOTIATION_MARKET_CACHE": str(good)}, timeout=120)
    assert first.returncode == 0 and first.stdout.split()[0] == "2", first.stderr
    tmpdir = tmp_path / "tmp"
    planted = tmpdir / f"negotiation-market-{os.getuid()}"
    shutil.copytree(good, planted)
    marker = tmp_path / "payload-ran"
    indexes = list(planted.rglob("*.nbi"))
    assert indexes, "the first run cached the module where the planted copy sits"
    for index in indexes:
        index.write_bytes(pickle.dumps(_Planted(marker)))
    for path in [planted, *planted.rglob("*")]:
        os.chown(path, 12345, 12345)
        path.chmod(0o777)
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # NEGOTIATION_MARKET_CACHE under a file: it cannot be made
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env={**env, "NEGOTIATION_MARKET_CACHE": str(blocked / "cache"),
                              "TMPDIR": str(tmpdir)}, timeout=120)
    assert out.returncode == 0 and out.stdout.split()[0] == "2", out.stderr
    assert not marker.exists(), "a planted pickle was loaded"
    assert not Path(out.stdout.split()[1]).is_relative_to(planted)
    notes = [line for line in out.stderr.splitlines() if "CacheNotice" in line]
    assert len(notes) == 1 and "owned by another user" in notes[0], out.stderr
    assert "compiling in memory" in notes[0]


def test_a_cache_folder_of_ours_is_closed_to_others(tmp_path, monkeypatch):
    """Made under a permissive umask (or by an older version), our own folder is used once
    nobody else may write to it."""
    root = tmp_path / "cache"
    (root / "compiled").mkdir(parents=True)
    for folder in (root, root / "compiled"):
        folder.chmod(0o777)
    monkeypatch.setenv("NEGOTIATION_MARKET_CACHE", str(root))
    assert generated.cache_dir() == root / "compiled"
    for folder in (root, root / "compiled"):
        assert folder.stat().st_mode & 0o022 == 0


def test_the_compiled_game_runs_on_the_signature_its_warm_up_compiled():
    """A first mover given as one number reached numba as a read-only broadcast view, a type
    of its own: the whole loop compiled a second time, silently, after the compile notice
    (a cold tournament sat 20 s at "pairings: 0 of 100")."""
    import numpy as np

    import strategies
    from market import engines
    from market.game.protocol import Side
    from market.game.rules import Protocol

    p = Protocol(5, 3)
    pair = [strategies.make("averaging", side, 1, p) for side in ("seller", "buyer")]
    engines.negotiate(p, Side.single(pair[0], 4, 1, 5), Side.single(pair[1], 4, 1, 5), 0,
                      np.random.default_rng(0))
    module = engines.compiled_module(pair, entries=("negotiate_rows",))
    assert module.negotiate_rows.signatures, "compiled"
    assert all("readonly" not in str(t) for sig in module.negotiate_rows.signatures
               for t in sig), module.negotiate_rows.signatures
