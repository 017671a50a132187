"""Saving and loading Q-tables (.npz, no pickle), from the library and from ``train``."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest

from market.game import qtable
from market.game.rules import Protocol
from market.game.table_files import ARRAYS, TablePair, load_tables, peek_tables, save_tables

ROOT = Path(__file__).resolve().parents[2]


run_cli = cli_run.run  # a command in this process (tests/support/cli_run.py)


@pytest.mark.parametrize("roles", [None, 2])
def test_round_trip_document_and_role_aware_layouts(tmp_path, roles):
    proto = Protocol(4, 3)
    rng = np.random.default_rng(0)
    shape = (qtable.n_rows(proto), proto.n_actions) if roles is None else (
        roles, qtable.n_rows(proto), proto.n_actions)
    pair = TablePair(proto, rng.random(shape), rng.random(shape), {"lr": 0.1, "note": "x"})
    path = tmp_path / "t.npz"
    save_tables(path, pair)
    with np.load(path, allow_pickle=False) as raw:  # the layout docs/pages/protocol.md promises
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


def _write(path, **arrays):
    base = {"seller": np.zeros((27, 7)), "buyer": np.zeros((27, 7)), "prices": np.int64(5),
            "rounds": np.int64(5)}
    base.update(arrays)
    np.savez(path, **{k: v for k, v in base.items() if v is not None})
    return path


@pytest.mark.parametrize("meta,needle", [
    ("[" * 100_000 + "]" * 100_000, "nests 100000 levels"),
    ('{"a": ' * 40 + "1" + "}" * 40, "nests 40 levels"),
    ("[1, 2]", "must be a JSON object"),
    ('"text"', "must be a JSON object"),
    ("{not json", "meta is not JSON"),
    (np.arange(3), "meta must be one JSON text"),
])
def test_meta_is_a_bounded_json_object(tmp_path, meta, needle):
    path = _write(tmp_path / "m.npz", meta=np.asarray(meta) if isinstance(meta, str) else meta)
    with pytest.raises(ValueError, match=needle) as info:
        load_tables(path)
    assert str(path) in str(info.value)


def test_deep_but_allowed_meta_and_brackets_inside_strings_load(tmp_path):
    meta = {"note": "[[[[" * 100, "nested": [[[[1]]]]}
    path = _write(tmp_path / "ok.npz", meta=np.str_(json.dumps(meta)))
    assert load_tables(path).meta == meta


def test_a_lying_header_is_refused_before_allocating(tmp_path):
    path = _write(tmp_path / "lie.npz")
    lying = tmp_path / "lying.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(lying, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "seller.npy":
                data = data.replace(b"(27, 7)", b"(27000, 700)")  # 151 MB claimed
            dst.writestr(info.filename, data)
    with pytest.raises(ValueError, match="claims more data than the file holds") as info:
        load_tables(lying)
    assert "lying.npz" in str(info.value)


@pytest.mark.parametrize("content,needle", [
    (b"just some text, not numbers\n", "not a zip archive"),
    (b"", "not a zip archive"),
])
def test_a_text_file_named_npz_says_so_without_pickle_advice(tmp_path, content, needle):
    path = tmp_path / "text.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=needle) as info:
        load_tables(path)
    assert "pickle" not in str(info.value)


def test_unexpected_arrays_and_mixed_layouts_are_refused(tmp_path):
    with pytest.raises(ValueError, match="member .extra.npy."):
        load_tables(_write(tmp_path / "x.npz", extra=np.zeros(3)))
    mixed = _write(tmp_path / "mixed.npz", seller=np.zeros((2, 27, 7)))
    with pytest.raises(ValueError, match="different layouts"):
        load_tables(mixed)
    huge = _write(tmp_path / "big.npz", prices=np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="prices must be one integer"):
        load_tables(huge)


@pytest.mark.parametrize("command", [["evaluate", "{f}"], ["baseline", "--seller", "qlearning:{f}"],
                                     ["train", "--load", "{f}", "--cycles", "0"],
                                     ["tournament", "--qtable", "{f}", "--out", "{d}"]])
def test_every_command_refuses_a_bad_table_in_one_line(tmp_path, command):
    f = _write(tmp_path / "deep.npz", meta=np.str_("[" * 100_000 + "]" * 100_000))
    args = [a.format(f=f, d=tmp_path / "out") for a in command]
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and "deep.npz" in err[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def _rezip(src: Path, dest: Path, rename=None, flag_bits: int = 0, declare: int | None = None,
           extra: int = 0) -> Path:
    """``src``'s members into ``dest``: renamed, flagged, declaring another size, or with
    ``extra`` more members, as a crafted archive would be."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            name = rename(info.filename) if rename else info.filename
            zout.writestr(zipfile.ZipInfo(name), data)
        for i in range(extra):
            zout.writestr(zipfile.ZipInfo(f"x{i}\x1b[31m.npy"), b"")
    if flag_bits or declare is not None:  # patch the central directory as an attacker would
        raw = bytearray(dest.read_bytes())
        at = raw.find(b"PK\x01\x02")
        if flag_bits:
            raw[at + 8] |= flag_bits
        if declare is not None:
            raw[at + 24:at + 28] = declare.to_bytes(4, "little")
        dest.write_bytes(bytes(raw))
    return dest


@pytest.mark.parametrize("case,needle", [
    ("fifo", "is a FIFO"),
    ("zero", "is a device"),
    ("dir", "is a directory"),
    ("suffix", "member 'seller'"),
    ("encrypted", "encrypted"),
    ("bomb", "declares 4,000,000,000 bytes"),
    ("many", f"members; at most {len(ARRAYS)}"),
    ("escape", "member 'x0\\\\x1b[31m.npy'"),
])
def test_special_files_and_crafted_archives_are_refused_before_reading(tmp_path, case, needle):
    import os

    good = _write(tmp_path / "good.npz")
    path = {
        "fifo": tmp_path / "fifo.npz", "zero": Path("/dev/zero"), "dir": tmp_path,
        "suffix": tmp_path / "s.npz", "encrypted": tmp_path / "e.npz",
        "bomb": tmp_path / "b.npz", "many": tmp_path / "m.npz", "escape": tmp_path / "x.npz",
    }[case]
    if case == "fifo":
        os.mkfifo(path)
    elif case == "suffix":
        _rezip(good, path, rename=lambda n: n.removesuffix(".npy"))
    elif case == "encrypted":
        _rezip(good, path, flag_bits=0x1)
    elif case == "bomb":
        _rezip(good, path, declare=4_000_000_000)
    elif case == "many":
        _rezip(good, path, extra=100_000)
    elif case == "escape":
        _rezip(good, path, extra=1, rename=lambda n: n if n != "rounds.npy" else "rounds.npy")
    with pytest.raises(ValueError) as exc:
        load_tables(path)
    message = str(exc.value)
    assert needle in message and "\x1b" not in message and len(message) < 400, message
    assert message.startswith(str(path)[:20])


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_commands_refuse_a_special_file_as_a_table_in_one_line(tmp_path, special):
    import os

    path = "/dev/zero"
    if special == "fifo":
        path = str(tmp_path / "t.npz")
        os.mkfifo(path)
    for args in (["evaluate", path], ["baseline", "--seller", f"qlearning:{path}"]):
        out = cli_run.run(*args, cwd=ROOT)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and ("FIFO" in lines[0] or "device" in lines[0]), out.stderr


def test_a_file_records_its_games_time_pressure_and_is_refused_for_another(tmp_path):
    game = Protocol(5, 5, 0.9, 1.0, breakdown=0.2, seller_cost=0.01, buyer_cost=0.03)
    path = tmp_path / "pressure.npz"
    save_tables(path, TablePair(game, np.zeros((27, 7)), np.zeros((27, 7))))
    assert load_tables(path).protocol == game and peek_tables(path)[0] == game
    with np.load(path) as arrays:  # only what the game has: no pressure, no arrays
        assert {"breakdown", "cost", "discount"} <= set(arrays.files)
    plain = tmp_path / "plain.npz"
    save_tables(plain, TablePair(Protocol(5, 5), np.zeros((27, 7)), np.zeros((27, 7))))
    with np.load(plain) as arrays:
        assert not {"breakdown", "cost", "discount"} & set(arrays.files)
    with pytest.raises(ValueError, match="tables are for P=5, T=5, breakdown 0 but the game "
                                         "has P=5, T=5, breakdown 0.1"):
        load_tables(plain, Protocol(5, 5, breakdown=0.1))
