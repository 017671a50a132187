"""The compiled episode loop: its generator, its copy of the table layout, its choice, its
update (against QLearning.learn and the market learner), and its play against the protocol."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from market.game import episodes, qtable, train_kernel
from market.game.pressure import Pressure
from market.game.protocol import Side, negotiate
from market.game.qtable import legal_rows
from market.game.rules import BUYER, SELLER, Protocol
from strategies.qlearning import MarketQLearning, QLearning

ROOT = Path(__file__).resolve().parents[2]
P5T5 = Protocol(5, 5)


def random_tables(rng: np.random.Generator, n: int, R: int, protocol: Protocol) -> np.ndarray:
    """Tie-free tables ``(n, 2, R, S, A)`` (zeros on illegal cells)."""
    legal = legal_rows(protocol)
    return np.ascontiguousarray(np.where(legal, rng.random((n, 2, R, *legal.shape)), 0.0))


def play_logged(q: np.ndarray, episodes: int, first0: int, eps: float, learns=(False, False),
                lr: float = 0.0, gamma: float = 1.0, seed: int = 0, stale_first: bool = False):
    """Run the kernel and return its per-move log ``(n, episodes, 2T)`` and counts."""
    n, T = q.shape[0], (q.shape[3] - 2) // (q.shape[4] - 2)
    log = np.zeros((n, episodes, 2 * T), dtype=np.int64)
    counts = np.zeros((n, 1, len(train_kernel.COUNT_COLUMNS)), dtype=np.int64)
    train_kernel.play(q, train_kernel.seed_states(seed, n), counts, np.full(episodes, eps),
                np.full(episodes, lr), first0, learns, gamma, stale_first=stale_first, log=log)
    return log, counts[:, 0]


# --- random numbers --------------------------------------------------------------------------
def test_generator_is_xoshiro256starstar_and_matches_the_python_reference(xoshiro):
    st = np.array([1, 2, 3, 4], dtype=np.uint64)
    # the first outputs of xoshiro256** from state (1, 2, 3, 4), worked by hand:
    # rotl(2 * 5, 7) * 9 = 11520; then s1 becomes 0, so the second output is 0
    assert [int(episodes.next_u64(st)) for _ in range(2)] == [11520, 0]
    ref = xoshiro(train_kernel.seed_states(7, 3)[2])
    st = train_kernel.seed_states(7, 3)[2].copy()
    for _ in range(1000):
        assert episodes.uniform(st) == ref.uniform()


def test_seed_streams_come_from_seed_sequence_spawn():
    states = train_kernel.seed_states(42, 5)
    children = np.random.SeedSequence(42).spawn(5)
    for i, child in enumerate(children):
        np.testing.assert_array_equal(states[i], child.generate_state(4, np.uint64))
    np.testing.assert_array_equal(train_kernel.seed_states(42, 2), states[:2])  # a prefix
    assert len({tuple(s) for s in states}) == 5


# --- the layout: one home, checked --------------------------------------------------------------
@pytest.mark.parametrize("prices, rounds", [(2, 1), (5, 5), (7, 3), (3, 10)])
def test_scalar_rows_and_legal_ranges_equal_qtables(prices, rounds):
    protocol = Protocol(prices, rounds)
    for move in range(protocol.max_moves):
        for offered in range(prices):
            assert episodes.move_row(prices, move, offered) == int(
                qtable.move_row(prices, move, offered))
            if move:
                assert episodes.move_row(prices, move, offered) == int(
                    qtable.row(protocol, offered + 1, (move - 1) // 2))
    legal = legal_rows(protocol)
    for row in range(qtable.n_rows(protocol)):
        lo, hi = episodes.legal_range(prices, rounds, row)
        mask = np.zeros(protocol.n_actions, dtype=bool)
        mask[lo:hi] = True
        np.testing.assert_array_equal(mask, legal[row])


def test_the_update_is_qtables_function_compiled():
    assert episodes.bellman_update.py_func is qtable.bellman_update
    assert episodes.bellman_update(0.5, 1.0, 0.0, 0.1, 0.9) == qtable.bellman_update(
        0.5, 1.0, 0.0, 0.1, 0.9)


# --- choosing -----------------------------------------------------------------------------------
def _choices(row: list[float], lo: int, hi: int, eps: float, n: int) -> np.ndarray:
    qf, st = np.asarray(row, dtype=float), train_kernel.seed_states(3, 1)[0]
    return np.array([episodes.choose(qf, 0, 5, lo, hi, eps, st) for _ in range(n)])


def test_choice_is_legal_and_breaks_ties_uniformly():
    row = [0.5, 0.5, 0.2, 0.5, 0.1, 0.5, 0.0]
    mid = _choices(row, 0, 7, 0.0, 40_000)  # every action legal
    counts = np.bincount(mid, minlength=7) / len(mid)
    np.testing.assert_allclose(counts[[0, 1, 3, 5]], 0.25, atol=0.01)
    assert counts[[2, 4, 6]].sum() == 0
    start = _choices(row, 0, 5, 0.0, 30_000)  # offers only: accept excluded
    np.testing.assert_allclose(np.bincount(start, minlength=7)[[0, 1, 3]] / 30_000, 1 / 3,
                               atol=0.01)
    assert set(np.unique(_choices(row, 5, 7, 0.0, 1000))) == {5}  # last round: accept wins
    explore = _choices(row, 5, 7, 1.0, 20_000)
    np.testing.assert_allclose(np.bincount(explore, minlength=7)[5:] / 20_000, 0.5, atol=0.015)


def test_exploration_keeps_the_epsilon_greedy_distribution():
    row = [0.1, 0.2, 0.9, 0.3, 0.0, 0.4, 0.2]  # offer 3 is best
    freq = np.bincount(_choices(row, 0, 7, 0.3, 60_000), minlength=7) / 60_000
    # greedy 70% of the time, uniform over the 7 legal actions 30% of the time
    np.testing.assert_allclose(freq[2], 0.7 + 0.3 / 7, atol=0.01)
    np.testing.assert_allclose(np.delete(freq, 2), 0.3 / 7, atol=0.01)


# --- learning -----------------------------------------------------------------------------------
def test_one_q_update_worked_by_hand():
    # Seller first: offers 4 (action 3) at "s"; the Buyer counters with 2 (action 1) in
    # row "4.0"; the Seller accepts (action 5) in row "2.0": a deal at level 2.
    lr, gamma = 0.1, 0.99
    q = np.zeros((2, 1, 27, 7))
    q[SELLER, 0, 2, 4] = 0.7  # row "2.0": offer 5 is worth 0.7
    q[SELLER, 0, 2, 5] = 0.9  # row "2.0": accept is worth 0.9 (the row's max)
    acts, rows = np.array([3, 1, 5]), np.array([0, 4, 2])
    qf = q.reshape(-1)
    for side in (SELLER, BUYER):
        episodes.learn_episode(qf, (1, 5, 5), side, SELLER, acts, rows, (3, 2, 0),
                              (lr, gamma, 0.0), Pressure())
    # Seller, move 0, Q(s, offer 4): 0.9 * 0 + 0.1 * (0 + 0.99 * max Q("2.0")) where the
    # max is read before the accept below is updated (the document updates online, in
    # order): 0.1 * 0.99 * 0.9 = 0.0891.
    assert q[SELLER, 0, 0, 3] == pytest.approx(0.0891)
    # Seller, move 2, Q("2.0", accept): 0.9 * 0.9 + 0.1 * (2/5 + 0.99 * 0) = 0.85.
    assert q[SELLER, 0, 2, 5] == pytest.approx(0.85)
    # Buyer, move 1, Q("4.0", offer 2): the Seller accepted, reward 1 - 2/5 = 0.6:
    # 0.9 * 0 + 0.1 * 0.6 = 0.06.
    assert q[BUYER, 0, 4, 1] == pytest.approx(0.06)
    assert np.count_nonzero(q[BUYER]) == 1 and np.count_nonzero(q[SELLER]) == 3


def test_a_deal_bonus_is_added_to_both_sides_reward_for_a_deal_only():
    # the same episode as above with a bonus of 0.05 for the deal
    q = np.zeros((2, 1, 27, 7))
    acts, rows = np.array([3, 1, 5]), np.array([0, 4, 2])
    for side in (SELLER, BUYER):
        episodes.learn_episode(q.reshape(-1), (1, 5, 5), side, SELLER, acts, rows, (3, 2, 0),
                              (0.1, 0.99, 0.05), Pressure())
    assert q[SELLER, 0, 2, 5] == pytest.approx(0.1 * (2 / 5 + 0.05))
    assert q[BUYER, 0, 4, 1] == pytest.approx(0.1 * (1 - 2 / 5 + 0.05))
    # a rejection (action 6) pays no bonus: the responder is no longer indifferent at 0
    q = np.zeros((2, 1, 27, 7))
    acts = np.array([4, 6])
    episodes.learn_episode(q.reshape(-1), (1, 5, 5), BUYER, SELLER, acts, rows, (2, 0, 0),
                              (0.1, 0.99, 0.05), Pressure())
    assert not q.any()


def test_a_deal_is_discounted_by_the_offers_made_before_the_accepted_one():
    # the episode above: offers at moves 0 and 1, the Seller accepts the second offer (k = 1)
    q = np.zeros((2, 1, 27, 7))
    acts, rows = np.array([3, 1, 5]), np.array([0, 4, 2])
    for side, d in ((SELLER, 0.5), (BUYER, 0.8)):
        episodes.learn_episode(q.reshape(-1), (1, 5, 5), side, SELLER, acts, rows, (3, 2, 0),
                              (0.1, 0.99, 0.0), Pressure(d, d))
    assert q[SELLER, 0, 2, 5] == pytest.approx(0.1 * 2 / 5 * 0.5)
    assert q[BUYER, 0, 4, 1] == pytest.approx(0.1 * (1 - 2 / 5) * 0.8)


@pytest.mark.parametrize("role_aware", [False, True])
@pytest.mark.parametrize("learner", [QLearning, MarketQLearning])
def test_kernel_update_equals_the_learners_replay(role_aware, learner):
    """One exploring episode per seed, learned by the kernel, equals QLearning.learn (and the
    market learner, individually rational candidates off) replaying the same moves."""
    rng = np.random.default_rng(3)
    n, R = 300, 2 if role_aware else 1
    extra = {"rational": False} if learner is MarketQLearning else {}
    for first in (SELLER, BUYER):
        before = random_tables(rng, n, R, P5T5)
        for side in (SELLER, BUYER):
            q = before.copy()
            learns = (side == SELLER, side == BUYER)
            log, _ = play_logged(q, 1, first, 1.0, learns, lr=0.3, gamma=0.9, seed=first)
            actions = log[:, 0]
            n_moves = (actions >= 0).sum(axis=1)
            last = actions[np.arange(n), n_moves - 1]
            offered = actions[np.arange(n), n_moves - 2] + 1
            level = np.where(last == P5T5.accept, offered, 0)
            record = _record(actions, first, level, n_moves)
            core = learner(side, n, protocol=P5T5, tables=before[:, side].copy(), lr=0.3,
                           gamma=0.9, **extra)
            reward = np.where(level > 0, level / 5 if side == SELLER else 1 - level / 5, 0.0)
            core.learn(record, np.arange(n), np.arange(n), reward)
            np.testing.assert_array_equal(q[:, side], core.tables)
            np.testing.assert_array_equal(q[:, 1 - side], before[:, 1 - side])
            assert not np.array_equal(q[:, side], before[:, side])


def _record(actions: np.ndarray, first: int, level: np.ndarray, n_moves: np.ndarray):
    from market.game.record import BatchRecord

    n = len(level)
    return BatchRecord(P5T5, actions.astype(np.int32), np.full(n, first, np.int8), level,
                       n_moves)


# --- playing ------------------------------------------------------------------------------------
def test_episodes_follow_the_protocol():
    rng = np.random.default_rng(1)
    q = random_tables(rng, 200, 1, P5T5)
    log, counts = play_logged(q, 10, SELLER, 0.5)
    acts = log.reshape(-1, 10)
    n_moves = (acts >= 0).sum(axis=1)
    assert (n_moves >= 2).all() and (n_moves <= 10).all()
    for m in range(10):
        played = m < n_moves
        assert (acts[~played, m] == -1).all()
        assert P5T5.legal(m)[acts[played, m]].all()
    idx = np.arange(len(acts))
    assert (acts[idx, n_moves - 1] >= 5).all()  # only accept/reject end a negotiation
    deals = acts[idx, n_moves - 1] == 5
    assert counts[:, 6].sum() == deals.sum()
    assert counts[:, 4].sum() == (acts[idx, n_moves - 2] + 1)[deals].sum()  # levels offered
    assert counts[:, :4].sum() == len(acts)  # every episode ended by exactly one side


@pytest.mark.parametrize("role_aware", [False, True])
def test_greedy_play_equals_the_protocol_with_qlearning_strategies(role_aware):
    """On tie-free tables the kernel's greedy play and ``negotiate`` with QLearning strategies
    playing the same tables make the same moves: one set of rules."""
    rng = np.random.default_rng(11)
    n, R = 400, 2 if role_aware else 1
    for protocol in (P5T5, Protocol(3, 7)):
        q = random_tables(rng, n, R, protocol)
        log, _ = play_logged(q, 2, SELLER, 0.0)  # episode 0: Seller first, 1: Buyer first
        for first in (SELLER, BUYER):
            sides = [Side([QLearning(s, n, protocol=protocol, tables=q[:, s].copy(),
                                     learning=False)], np.zeros(n, np.intp), np.arange(n),
                          np.ones(n, np.int64), np.full(n, protocol.prices, np.int64))
                     for s in (SELLER, BUYER)]
            record = negotiate(protocol, sides[0], sides[1], first, rng)
            np.testing.assert_array_equal(log[:, first], record.actions)


def test_original_test_loop_first_mover_repeats_its_opening_and_never_accepts():
    rng = np.random.default_rng(5)
    q = random_tables(rng, 300, 1, P5T5)
    log, _ = play_logged(q, 2, SELLER, 0.0, stale_first=True)
    for first in (SELLER, BUYER):
        acts = log[:, first]
        opening = q[:, first, 0, 0, :5].argmax(axis=1)  # the start row's greedy offer
        for m in range(0, 10, 2):
            played = acts[:, m] >= 0
            np.testing.assert_array_equal(acts[played, m], opening[played])
    # and the second mover still answers the offers it sees, as the protocol says
    normal, _ = play_logged(q, 2, SELLER, 0.0)
    np.testing.assert_array_equal(log[:, :, :2], normal[:, :, :2])


# --- compiling ----------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["train", "--cycles", "1"], ["market", "--steps", "2"]])
def test_a_machine_without_numba_gets_one_line_and_exit_2(tmp_path, command):
    """The training kernel and the market engine alike."""
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('numba is broken on this machine')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), *command],
                         capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "numba" in lines[0] and "numba is broken on this machine" in lines[0]


_TRAIN_SCRIPT = """
import numpy as np
from market.game import train_kernel
q = np.zeros((2, 2, 1, 12, 5))
train_kernel.play(q, train_kernel.seed_states(0, 2), np.zeros((2, 1, 8), np.int64),
                  np.full(50, 0.5), np.full(50, 0.3), 0, (True, True), 0.9)
print(repr(float(q.sum())))
"""


def test_an_edited_update_reaches_the_kernel_whatever_numbas_cache_holds(tmp_path):
    """numba checks only a cached function's own file; the kernel inlines the update from
    qtable.py. Edited in a copy of the package, under ``NUMBA_CACHE_DIR``, the edit is
    trained with on the next run (a new generated module). (That the original comes back
    after an edit, wherever the cache lives, is held by tests/compiled/test_build.py on small
    modules: each kernel compile here costs seconds.)"""
    copy = tmp_path / "src"
    for name in ("market", "strategies"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    qtable_py = copy / "market" / "game" / "qtable.py"
    original = qtable_py.read_text()
    update = "return (1.0 - lr) * q_sa + lr * (reward + gamma * next_value)"
    assert update in original
    qtable_py.write_text(original.replace(update, update.replace("reward", "2.0 * reward")))
    sums = []
    for path, env in ((ROOT, {}), (copy, {"NUMBA_CACHE_DIR": str(tmp_path / "numba"),
                                          "NEGOTIATION_MARKET_CACHE": str(tmp_path / "gen")})):
        out = subprocess.run([sys.executable, "-c", _TRAIN_SCRIPT], cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": str(path), **env},
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        sums.append(float(out.stdout.split()[-1]))
    assert sums[1] != sums[0]
