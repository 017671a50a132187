"""The Q-update, the action choice and the exploration schedule, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from market.game.qtable import legal_rows
from market.game.record import BatchRecord
from market.game.rules import SELLER, Protocol, level_rewards
from market.game.training import (
    Batch,
    Episodes,
    choose,
    exploration,
    learn,
    learn_stacked,
    legal_block,
    play,
    play_stacked,
    preset,
)
from strategies.qlearning import QLearning

P5T5 = Protocol(5, 5)


def _hand_episode() -> Episodes:
    # Seller first: offers 4 (action 3) at "s"; Buyer counters with 2 (action 1) in
    # row "4.0"; Seller accepts (action 5) in row "2.0": a deal at level 2.
    actions = np.full((1, 10), -1)
    actions[0, :3] = [3, 1, 5]
    return Episodes(SELLER, actions, np.array([3]), np.array([2]))


def test_one_q_update_worked_by_hand():
    lr, gamma = 0.1, 0.99
    seller = np.zeros((1, 1, 27, 7))
    seller[0, 0, 2, 4] = 0.7  # row "2.0": offer 5 is worth 0.7
    seller[0, 0, 2, 5] = 0.9  # row "2.0": accept is worth 0.9 (the row's max)
    buyer = np.zeros((1, 1, 27, 7))
    ep = _hand_episode()
    learn(seller, SELLER, ep, ep.rewards(0, 5), lr, gamma, legal_rows(P5T5))
    learn(buyer, 1, ep, ep.rewards(1, 5), lr, gamma, legal_rows(P5T5))
    # Seller, move 0, Q(s, offer 4): 0.9 * 0 + 0.1 * (0 + 0.99 * max Q("2.0")) where the
    # max is read before the accept below is updated (the document updates online, in
    # order): 0.1 * 0.99 * 0.9 = 0.0891.
    assert seller[0, 0, 0, 3] == pytest.approx(0.0891)
    # Seller, move 2, Q("2.0", accept): 0.9 * 0.9 + 0.1 * (2/5 + 0.99 * 0) = 0.85.
    assert seller[0, 0, 2, 5] == pytest.approx(0.85)
    # Buyer, move 1, Q("4.0", offer 2): the Seller accepted, reward 1 - 2/5 = 0.6:
    # 0.9 * 0 + 0.1 * 0.6 = 0.06.
    assert buyer[0, 0, 4, 1] == pytest.approx(0.06)
    # Nothing else moved.
    assert np.count_nonzero(buyer) == 1
    assert np.count_nonzero(seller) == 3


@pytest.mark.parametrize("role_aware", [False, True])
def test_vectorised_update_equals_the_core_learner_replay(role_aware):
    """The trainer's one-step update equals QLearning.learn's move-by-move replay."""
    rng = np.random.default_rng(3)
    n, R = 300, 2 if role_aware else 1
    legal = legal_rows(P5T5)
    tables = [np.where(legal, rng.random((n, R, 27, 7)), 0.0) for _ in range(2)]
    for first in (0, 1):
        ep = play((tables[0], tables[1]), first, (1.0, 1.0), P5T5, rng)
        record = BatchRecord(P5T5, ep.actions.astype(np.int16), np.full(n, first, np.int8),
                             ep.level, ep.n_moves)
        for side in (0, 1):
            mine = tables[side].copy()
            learn(mine, side, ep, ep.rewards(side, 5), 0.3, 0.9, legal)
            core = QLearning(side, n, protocol=P5T5, tables=tables[side].copy(), lr=0.3,
                             gamma=0.9)
            core.learn(record, np.arange(n), np.arange(n), ep.rewards(side, 5))
            np.testing.assert_allclose(mine, core.tables, rtol=0, atol=1e-15)
            assert not np.array_equal(mine, tables[side])


def test_choice_is_legal_and_breaks_ties_uniformly():
    rng = np.random.default_rng(0)
    q = np.tile([0.5, 0.5, 0.2, 0.5, 0.1, 0.5, 0.0], (40_000, 1))
    mid = choose(q, legal_block(P5T5, 1), 0.0, rng)  # every action legal
    counts = np.bincount(mid, minlength=7) / len(mid)
    np.testing.assert_allclose(counts[[0, 1, 3, 5]], 0.25, atol=0.01)
    assert counts[[2, 4, 6]].sum() == 0
    start = choose(q, legal_block(P5T5, 0), 0.0, rng)  # offers only: accept excluded
    np.testing.assert_allclose(np.bincount(start, minlength=7)[[0, 1, 3]] / len(q), 1 / 3,
                               atol=0.01)
    last = choose(q, legal_block(P5T5, 9), 0.0, rng)  # last round: accept or reject only
    assert set(np.unique(last)) == {5}
    explore = choose(q, legal_block(P5T5, 9), 1.0, rng)
    np.testing.assert_allclose(np.bincount(explore, minlength=7)[5:] / len(q), 0.5, atol=0.01)


def test_episodes_follow_the_protocol():
    rng = np.random.default_rng(1)
    legal = legal_rows(P5T5)
    t = np.where(legal, rng.random((500, 1, 27, 7)), 0.0)
    for first in (0, 1):
        ep = play((t, t.copy()), first, (0.5, 0.5), P5T5, rng)
        assert (ep.n_moves >= 2).all() and (ep.n_moves <= 10).all()
        for m in range(10):
            a = ep.actions[:, m]
            played = m < ep.n_moves
            assert (a[~played] == -1).all()
            assert P5T5.legal(m)[a[played]].all()
        last = ep.actions[np.arange(500), ep.n_moves - 1]
        assert (last >= 5).all()  # only accept/reject end a negotiation
        deal = last == 5
        offered = ep.actions[np.arange(500), ep.n_moves - 2] + 1
        np.testing.assert_array_equal(ep.level[deal], offered[deal])
        assert (ep.level[~deal] == 0).all()


def test_document_exploration_schedule_stays_near_one_in_a_cycle():
    cfg = preset("seed")
    assert exploration(cfg, 0, 0) == pytest.approx(1.0)
    assert exploration(cfg, 99, 4999) == pytest.approx(0.1 + 0.9 * np.exp(-0.099))
    assert min(exploration(cfg, e, 0) for e in range(100)) > 0.9
    # the in-cycle clock restarts every cycle
    assert exploration(cfg, 0, 4900) == pytest.approx(1.0)
    tuned = preset("default")
    assert exploration(tuned, 0, tuned.total_episodes - 1) == 0.0


def test_paired_episodes_equal_two_episodes_one_after_the_other():
    """Role-aware tables: a seed's Seller-first and Buyer-first episodes touch disjoint
    cells, so playing and learning them as one batch equals doing them in turn."""
    rng = np.random.default_rng(7)
    n = 200
    legal = legal_rows(P5T5)
    stack = np.stack([np.where(legal, rng.random((n, 2, 27, 7)), 0.0) for _ in range(2)])
    batch = Batch(np.tile(np.arange(n), 2), np.repeat([SELLER, 1 - SELLER], n))
    ep = play_stacked(stack, batch, (1.0, 1.0), P5T5, rng)
    rewards = level_rewards(ep.level, 5)
    paired = stack.copy()
    learn_stacked(paired, (0, 1), ep, rewards, 0.2, 0.95, legal)
    in_turn = stack.copy()
    for half, first in ((slice(0, n), SELLER), (slice(n, 2 * n), 1 - SELLER)):
        one = Episodes(first, ep.actions[half], ep.n_moves[half], ep.level[half])
        learn_stacked(in_turn, (0, 1), one, rewards[:, half], 0.2, 0.95, legal)
    np.testing.assert_array_equal(paired, in_turn)
    # Seller-first rows wrote only the Seller's role-0 and the Buyer's role-1 cells
    changed = paired != stack
    assert changed[SELLER, :, 0].any() and changed[SELLER, :, 1].any()


def test_frozen_greedy_lookup_picks_uniformly_among_legal_maxima():
    from market.game.training import GreedyIndex, Store

    stack = np.zeros((2, 1, 1, 27, 7))
    stack[0, 0, 0, 0] = [0.3, 0.5, 0.5, 0.1, 0.0, 0.9, 0.9]  # start row: accept/reject illegal
    stack[0, 0, 0, 3] = [0.2, 0.7, 0.1, 0.7, 0.7, 0.4, 0.0]  # "3.0": three maxima
    stack[0, 0, 0, 22] = [0.9, 0.9, 0.9, 0.9, 0.9, 0.1, 0.2]  # "2.4": last round
    store = Store(stack)
    idx = GreedyIndex.of(store, SELLER, legal_rows(P5T5))
    rng = np.random.default_rng(5)
    for row, expected in ((0, [1, 2]), (3, [1, 3, 4]), (22, [6])):
        picks = idx.pick(np.full(30_000, row), rng)
        assert set(np.unique(picks)) == set(expected)
        np.testing.assert_allclose(np.bincount(picks)[expected] / 30_000, 1 / len(expected),
                                   atol=0.01)


def test_exploration_draw_keeps_the_epsilon_greedy_distribution():
    from market.game.training import Store, _explore_or_choose

    stack = np.zeros((2, 1, 1, 27, 7))
    stack[0, 0, 0, 6] = [0.1, 0.2, 0.9, 0.3, 0.0, 0.4, 0.2]  # row "1.1": offer 3 is best
    store, rng = Store(stack), np.random.default_rng(9)
    rows = np.full(60_000, 6)
    picks = _explore_or_choose(store, rows, legal_block(P5T5, 3), 0.3, rng)
    freq = np.bincount(picks, minlength=7) / rows.size
    # greedy 70% of the time, uniform over the 7 legal actions 30% of the time
    np.testing.assert_allclose(freq[2], 0.7 + 0.3 / 7, atol=0.01)
    np.testing.assert_allclose(np.delete(freq, 2), 0.3 / 7, atol=0.01)
    last = _explore_or_choose(store, np.full(20_000, 21), legal_block(P5T5, 9), 1.0, rng)
    assert set(np.unique(last)) == {5, 6}  # exploring in the last round: accept or reject
