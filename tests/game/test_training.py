"""The document's trainer (snapshot rule, first movers, one side only), the tuned default,
and the ``train`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import market.game.training as training
from market.game import qtable
from market.game.qtable import legal_rows
from market.game.rules import BUYER, SELLER, Protocol
from market.game.training import preset, train

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "train", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_trainer_plays_the_table_it_had_before_its_last_training_cycle():
    cfg = preset("seed", cycles=6, episodes=30, test_episodes=10, seeds=2, seed=5)
    starts, seen = [], []

    def hook(cycle, trainee, trainer_table, live):
        starts.append([t.copy() for t in live])
        seen.append((trainee, trainer_table.copy()))

    res = train(cfg, on_cycle=hook, nash_conv=False, exact=False)
    # Seller trains first, then the roles swap every cycle.
    assert [t for t, _ in seen] == [SELLER, BUYER] * 3
    assert res.trainer_versions == [0, 0, 1, 2, 3, 4]
    for c, (trainee, table) in enumerate(seen):
        trainer = 1 - trainee
        if c == 0:
            np.testing.assert_array_equal(table, starts[0][trainer])
        else:
            # the table the trainer had at the start of the cycle it just trained in
            np.testing.assert_array_equal(table, starts[c - 1][trainer])
            assert not np.array_equal(table, starts[c][trainer])
    # in cycle 1 the Seller, fresh from training, still plays its untrained table
    assert not seen[1][1].any()
    # a side does not learn while it is the trainer
    for c in range(5):
        trainer = 1 - seen[c][0]
        np.testing.assert_array_equal(starts[c][trainer], starts[c + 1][trainer])


def test_first_mover_alternates_every_episode(monkeypatch):
    firsts = []
    real_play = training.play_store

    def spy(store, first, epsilon, protocol, rng, greedy=None):
        firsts.append((first, epsilon))
        return real_play(store, first, epsilon, protocol, rng, greedy)

    monkeypatch.setattr(training, "play_store", spy)
    train(preset("seed", cycles=2, episodes=4, test_episodes=4), nash_conv=False, exact=False)
    # cycle 0: Seller trains, the trainer (Buyer) moves first on even episodes
    assert [f for f, _ in firsts[:4]] == [BUYER, SELLER, BUYER, SELLER]
    assert all(eps[BUYER] == 0.0 and eps[SELLER] > 0.9 for _, eps in firsts[:4])
    # cycle 1: Buyer trains, the trainer (Seller) moves first on even episodes
    assert [f for f, _ in firsts[4:8]] == [SELLER, BUYER, SELLER, BUYER]
    assert all(eps[SELLER] == 0.0 and eps[BUYER] > 0.9 for _, eps in firsts[4:8])
    # test: greedy, Seller first in episode 0, then alternating
    assert firsts[8:] == [(SELLER, (0.0, 0.0)), (BUYER, (0.0, 0.0))] * 2


def test_one_side_trained_leaves_the_other_untouched_and_cells_blank():
    res = train(preset("seed", train="seller", cycles=4, seeds=3), nash_conv=False,
                exact=False)
    assert not res.buyer.any()  # never trained: all cells still 0 (blank)
    assert res.seller.any()
    legal = legal_rows(res.protocol)
    # cells that can never be played are never written: start-row accept/reject,
    # last-round offers, the terminal row
    assert not res.seller[:, :, ~legal].any()
    # the Seller's trainer is its opponent's initial table in every cycle
    assert res.trainer_versions == [0, 0, 0, 0]
    h = res.history
    assert (h.seller_validated + h.seller_rejected + h.buyer_validated + h.buyer_rejected
            == 100).all()
    assert (h.deals == h.seller_validated + h.buyer_validated).all()


def test_blank_cells_in_printed_tables():
    from market.cli.train_cmd import q_tables

    res = train(preset("seed", train="seller", cycles=2), nash_conv=False, exact=False)
    seller_raw, buyer_raw = q_tables(res.seller[0], res.buyer[0], res.protocol, 0.0, False)
    cells = [list(col._cells) for col in seller_raw.columns[1:]]  # offers, accept, reject
    labels = qtable.row_labels(res.protocol)
    last_round = [labels.index(f"{p}.4") for p in range(1, 6)]
    assert all(cells[a][i] == "" for a in range(5) for i in last_round)  # no offers there
    assert any(cells[5][i] != "" for i in last_round)  # but accepting was tried
    assert all(cells[a][0] != "" for a in range(5))  # every opening offer was tried
    assert all(c == "" for col in buyer_raw.columns[1:] for c in col._cells)


def test_same_seed_same_tables_and_another_seed_differs():
    cfg = preset("seed", cycles=3, seeds=4, seed=11)
    a, b = (train(cfg, nash_conv=False, exact=False) for _ in range(2))
    np.testing.assert_array_equal(a.seller, b.seller)
    np.testing.assert_array_equal(a.buyer, b.buyer)
    assert a.test.equals(b.test)
    c = train(cfg.replace(seed=12), nash_conv=False, exact=False)
    assert not np.array_equal(a.seller, c.seller)
    # the seeds of one run are independent of each other
    assert not np.array_equal(a.seller[0], a.seller[1])


def test_seed_preset_only_seller_beats_only_buyer():
    """With only the Seller trained its wallet is far above the only-Buyer case."""
    seller = train(preset("seed", train="seller", seeds=4, test_episodes=200), nash_conv=False)
    buyer = train(preset("seed", train="buyer", seeds=4, test_episodes=200), nash_conv=False)
    s, b = seller.test.exact_seller_wallet, buyer.test.exact_seller_wallet
    assert s.min() > 2 * b.max()
    # the sampled greedy test agrees with its exact expectation
    assert abs(seller.test.seller_wallet.median() - s.median()) < 60


def test_default_preset_converges_on_a_small_game():
    cfg = preset("default", prices=3, rounds=3, cycles=20, episodes=400, seeds=6,
                 test_episodes=100)
    res = train(cfg)
    nc = res.test.nash_conv
    assert np.median(nc) <= 0.05, nc.tolist()
    assert res.seller.shape == (6, 2, 11, 5)  # role-aware: a table for each role
    # NashConv per cycle is recorded and falls
    per_cycle = res.history.groupby("cycle").nash_conv.median()
    assert per_cycle.iloc[-1] < per_cycle.iloc[0]


def test_cli_json_summary_plot_and_save(tmp_path):
    png, npz = tmp_path / "fig.png", tmp_path / "t.npz"
    out = run_cli("--preset", "seed", "--cycles", "4", "--seeds", "3", "--test-episodes", "20",
                  "--plot", str(png), "--save", str(npz), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["config"]["cycles"] == 4 and data["config"]["episodes"] == 100
    assert data["test"]["total"] == 20
    assert set(data["nash_conv"]) == {"median", "p10", "p90"}
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert npz.exists()
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_cli_prints_statistics_tables_and_nash_conv():
    out = run_cli("--preset", "seed", "--cycles", "2", "--test-episodes", "10")
    assert out.returncode == 0, out.stderr
    for text in ("Global statistics", "validated by Seller", "rejected by Buyer",
                 "Seller wallet", "Seller Q-table, raw", "Buyer Q-table, normalised",
                 "NashConv of the final tables"):
        assert text in out.stdout


@pytest.mark.parametrize(
    "args, name",
    [
        (["--prices", "1"], "--prices"),
        (["--rounds", "0"], "--rounds"),
        (["--cycles", "0"], "--cycles"),
        (["--cycles", "-3"], "--cycles"),
        (["--episodes", "0"], "--episodes"),
        (["--test-episodes", "0"], "--test-episodes"),
        (["--seeds", "0"], "--seeds"),
        (["--seed", "x"], "--seed"),
        (["--train", "nobody"], "--train"),
        (["--first", "nobody"], "--first"),
        (["--preset", "fast"], "--preset"),
        (["--plot", "fig.jpg"], "--plot"),
        (["--save", "tables.txt"], "--save"),
        (["--load", "does-not-exist.npz"], "does-not-exist.npz"),
    ],
)
def test_cli_bad_values_exit_2_with_one_line(args, name):
    out = run_cli(*args)
    assert out.returncode == 2, out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert name in lines[0]


def test_bench_reference_trainer_agrees_with_the_array_trainer():
    """The pure-Python reference in the bench is the same algorithm: same figures."""
    from market.bench.training import reference_train
    from market.game.evaluation import exact_test

    proto = Protocol(5, 5)
    ref = [exact_test(np.array(s), np.array(b), proto)["seller_wallet"]
           for s, b in (reference_train(seed=i, train_both=False) for i in range(4))]
    arr = train(preset("seed", train="seller", seeds=4, test_episodes=1000), nash_conv=False)
    assert abs(np.median(ref) - arr.test.exact_seller_wallet.median()) < 150
    assert min(ref) > 3000  # docs/reference-figures.md: 3,491 (3,350-3,586)
