"""Saving and loading Q-tables (.npz, no pickle), from the library and from ``train``."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from market.game import qtable
from market.game.rules import Protocol
from market.game.tables import TablePair, load_tables, save_tables

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args],
                          capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("roles", [None, 2])
def test_round_trip_document_and_role_aware_layouts(tmp_path, roles):
    proto = Protocol(4, 3)
    rng = np.random.default_rng(0)
    shape = (qtable.n_rows(proto), proto.n_actions) if roles is None else (
        roles, qtable.n_rows(proto), proto.n_actions)
    pair = TablePair(proto, rng.random(shape), rng.random(shape), {"lr": 0.1, "note": "x"})
    path = tmp_path / "t.npz"
    save_tables(path, pair)
    with np.load(path, allow_pickle=False) as raw:  # the file layout docs/protocol.md promises
        assert raw["seller"].shape == shape and raw["buyer"].shape == shape
        assert int(raw["prices"]) == 4 and int(raw["rounds"]) == 3
    back = load_tables(path, proto)
    np.testing.assert_array_equal(back.seller, pair.seller)
    np.testing.assert_array_equal(back.buyer, pair.buyer)
    assert back.meta == {"lr": 0.1, "note": "x"}
    assert back.role_aware == (roles == 2)


def test_corrupt_and_mismatched_files_raise_value_error(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="bad.npz"):
        load_tables(bad)
    truncated = tmp_path / "trunc.npz"
    save_tables(truncated, TablePair(Protocol(), np.zeros((27, 7)), np.zeros((27, 7))))
    truncated.write_bytes(truncated.read_bytes()[:200])
    with pytest.raises(ValueError):
        load_tables(truncated)
    missing = tmp_path / "missing.npz"
    np.savez(missing, seller=np.zeros((27, 7)), prices=5, rounds=5)
    with pytest.raises(ValueError, match="buyer"):
        load_tables(missing)
    wrong_shape = tmp_path / "shape.npz"
    np.savez(wrong_shape, seller=np.zeros((26, 7)), buyer=np.zeros((27, 7)), prices=5, rounds=5)
    with pytest.raises(ValueError, match="seller"):
        load_tables(wrong_shape)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, seller=np.array([{"a": 1}], dtype=object), buyer=np.zeros((27, 7)),
             prices=5, rounds=5)
    with pytest.raises(ValueError):
        load_tables(pickled)
    good = tmp_path / "good.npz"
    save_tables(good, TablePair(Protocol(5, 5), np.zeros((27, 7)), np.zeros((27, 7))))
    with pytest.raises(ValueError, match="P=5, T=5"):
        load_tables(good, Protocol(4, 5))
    assert zipfile.is_zipfile(good)


def test_train_save_then_load_tests_the_same_tables(tmp_path):
    path = tmp_path / "doc.npz"
    first = run_cli("train", "--preset", "seed", "--train", "seller", "--cycles", "3",
                    "--test-episodes", "50", "--save", str(path), "--json")
    assert first.returncode == 0, first.stderr
    saved = load_tables(path)
    assert saved.seller.shape == (1, 27, 7) and not saved.role_aware
    assert saved.meta["cycles"] == 3 and saved.meta["train"] == "seller"
    again = run_cli("train", "--preset", "seed", "--load", str(path), "--cycles", "0",
                    "--test-episodes", "50", "--json")
    assert again.returncode == 0, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    # testing the loaded tables gives the same exact expectation and NashConv
    assert a["test"]["exact_seller_wallet"] == b["test"]["exact_seller_wallet"]
    assert a["nash_conv"] == b["nash_conv"]


def test_default_preset_saves_role_aware_tables(tmp_path):
    path = tmp_path / "ra.npz"
    out = run_cli("train", "--cycles", "1", "--episodes", "50", "--prices", "3", "--rounds",
                  "2", "--test-episodes", "10", "--save", str(path), "--json")
    assert out.returncode == 0, out.stderr
    pair = load_tables(path, Protocol(3, 2))
    assert pair.role_aware and pair.seller.shape == (2, 8, 5)
    # and training can continue from them
    more = run_cli("train", "--load", str(path), "--cycles", "1", "--episodes", "50",
                   "--test-episodes", "10", "--json")
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout)["config"]["role_aware"] is True


@pytest.mark.parametrize("content", [b"garbage", b""])
def test_cli_load_of_a_corrupt_file_is_one_line_exit_2(tmp_path, content):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(content)
    out = run_cli("train", "--load", str(bad))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr and "bad.npz" in lines[0]


def test_cli_load_for_another_game_is_one_line_exit_2(tmp_path):
    path = tmp_path / "p5.npz"
    save_tables(path, TablePair(Protocol(5, 5), np.zeros((27, 7)), np.zeros((27, 7))))
    out = run_cli("train", "--load", str(path), "--prices", "4")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "P=5" in lines[0]


class TestMalformedFiles:
    """Files that look almost right are refused with one clear ValueError."""

    S, A = 27, 7  # P = T = 5

    def _write(self, path, **arrays):
        base = dict(seller=np.zeros((self.S, self.A)), buyer=np.zeros((self.S, self.A)),
                    prices=np.int64(5), rounds=np.int64(5))
        base.update(arrays)
        np.savez(path, **base)
        return path

    @pytest.mark.parametrize(
        "arrays, message",
        [
            ({"prices": np.float64(np.inf)}, "prices must be one integer"),
            ({"prices": np.array([5, 5])}, "prices must be one integer"),
            ({"rounds": np.float64(5.9)}, "rounds must be one integer"),
            ({"seller": np.zeros((27, 7), dtype=complex)}, "real numbers"),
        ],
    )
    def test_bad_sizes_and_dtypes(self, tmp_path, arrays, message):
        path = self._write(tmp_path / "t.npz", **arrays)
        with pytest.raises(ValueError, match=message):
            load_tables(path)

    def test_a_renamed_npy_file(self, tmp_path):
        path = tmp_path / "t.npz"
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
        with pytest.raises(ValueError, match="single .npy"):
            load_tables(path)

    def test_a_directory(self, tmp_path):
        with pytest.raises(ValueError, match="directory"):
            load_tables(tmp_path)
