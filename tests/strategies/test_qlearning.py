"""The Q-learning strategy: its Bellman update replayed from a record, worked by hand, and its
greedy choice with uniform ties (the trainer's kernel is checked against it in
tests/game/test_kernel.py)."""

from __future__ import annotations

import numpy as np
import pytest

from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER, Protocol
from strategies.qlearning import QLearning

P5T5 = Protocol(5, 5)


def test_one_q_update_worked_by_hand():
    # Seller first: offers 4 (action 3) at "s"; the Buyer counters with 2 (action 1) in
    # row "4.0"; the Seller accepts (action 5) in row "2.0": a deal at level 2.
    actions = np.full((1, 10), -1, dtype=np.int32)
    actions[0, :3] = [3, 1, 5]
    record = BatchRecord(P5T5, actions, np.array([SELLER], np.int8), np.array([2]),
                         np.array([3]))
    seller = np.zeros((1, 27, 7))
    seller[0, 2, 4], seller[0, 2, 5] = 0.7, 0.9  # row "2.0": accept (0.9) is the max
    s = QLearning(SELLER, 1, protocol=P5T5, tables=seller, role_aware=False, lr=0.1, gamma=0.99)
    b = QLearning(BUYER, 1, protocol=P5T5, role_aware=False, lr=0.1, gamma=0.99)
    one = np.arange(1)
    s.learn(record, one, one, np.array([2 / 5]))
    b.learn(record, one, one, np.array([1 - 2 / 5]))
    # Seller, move 0: 0.1 * 0.99 * max Q("2.0") read before the accept is updated = 0.0891
    assert s.tables[0, 0, 0, 3] == pytest.approx(0.0891)
    # Seller, move 2: 0.9 * 0.9 + 0.1 * 2/5 = 0.85
    assert s.tables[0, 0, 2, 5] == pytest.approx(0.85)
    # Buyer, move 1: the Seller accepted, reward 0.6: 0.1 * 0.6 = 0.06
    assert b.tables[0, 0, 4, 1] == pytest.approx(0.06)
    assert np.count_nonzero(b.tables) == 1 and np.count_nonzero(s.tables) == 3


def test_greedy_choice_breaks_ties_uniformly_among_legal_actions(observe, rng):
    table = np.zeros((27, 7))
    table[3] = [0.2, 0.7, 0.1, 0.7, 0.7, 0.4, 0.0]  # row "3.0": three maxima
    learner = QLearning(SELLER, 1, protocol=P5T5, tables=table, role_aware=False,
                        learning=False)
    picks = learner.act(observe(P5T5, SELLER, 1, np.full(30_000, 3), 1, 5), rng)
    assert set(np.unique(picks)) == {1, 3, 4}
    np.testing.assert_allclose(np.bincount(picks, minlength=7)[[1, 3, 4]] / 30_000, 1 / 3,
                               atol=0.01)


def test_classifier_states_only_what_differs(expected_classifier):
    expected_classifier("qlearning", learns=True, stochastic=True, individually_rational=False,
                        memory="Q-table")
