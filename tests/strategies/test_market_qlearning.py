"""The market's Q-learner: rational action masks and the market clock's value of waiting."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.game import qtable
from market.game.protocol import Side, negotiate
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER, Protocol
from strategies.qlearning import MarketQLearning


def test_exploring_rational_learner_never_offers_or_accepts_outside_its_range():
    proto = Protocol(7, 4)
    rng = np.random.default_rng(0)
    n = 4000
    seller = MarketQLearning(SELLER, n, protocol=proto, epsilon_start=1.0, epsilon_end=1.0)
    buyer = strategies.make("zi-u", BUYER, 1, proto) if "zi-u" in strategies.STRATEGIES else (
        MarketQLearning(BUYER, n, protocol=proto, rational=False, epsilon_start=1.0,
                        epsilon_end=1.0)
    )
    lo = rng.integers(1, 8, n)
    first = rng.integers(0, 2, n)
    rec = negotiate(
        proto,
        Side([seller], np.zeros(n, dtype=np.intp), np.arange(n), lo, np.full(n, 7)),
        Side([buyer], np.zeros(n, dtype=np.intp),
             np.arange(n) if isinstance(buyer, MarketQLearning) else np.zeros(n, dtype=np.intp),
             np.ones(n, dtype=np.int64), np.full(n, 7)),
        first,
        rng,
    )
    P = proto.prices
    last_buyer_offer = np.zeros(n, dtype=np.int64)
    for m in range(proto.max_moves):
        a = rec.actions[:, m].astype(np.int64)
        mover = rec.mover(m)
        live = a >= 0
        s_moves = live & (mover == SELLER)
        offers = s_moves & (a < P)
        assert (a[offers] + 1 >= lo[offers]).all()  # never asks below cost
        accepts = s_moves & (a == P)
        assert (last_buyer_offer[accepts] >= lo[accepts]).all()  # never accepts below cost
        b_offer = live & (mover == BUYER) & (a < P)
        last_buyer_offer[b_offer] = a[b_offer] + 1
    assert rec.deal.any() and (rec.level[rec.deal] >= lo[rec.deal]).all()
    # it did explore: many different opening asks
    assert np.unique(rec.actions[first == SELLER, 0]).size == P


def _one_offer_then_rejected(proto: Protocol) -> BatchRecord:
    """The Seller opens with level 2, the Buyer walks away."""
    actions = np.full((1, proto.max_moves), -1, dtype=np.int16)
    actions[0, :2] = (1, proto.reject)
    return BatchRecord(proto, actions, np.array([SELLER], dtype=np.int8), np.array([0]),
                       np.array([2]))


@pytest.mark.parametrize(
    ("time_left", "expected"), [(1, 0.0), (2, 0.9 * 0.2), (3, 0.9 * 0.5), (9, 0.9 * 0.7)]
)
def test_under_the_clock_walking_away_is_worth_the_discounted_value_of_waiting(time_left, expected):
    proto = Protocol(5, 5)
    learner = MarketQLearning(SELLER, 1, protocol=proto, buckets=3, lr=1.0, gamma=0.9)
    learner.wait_value[0] = (0.2, 0.5, 0.7)  # last step, one before, earlier
    rec = _one_offer_then_rejected(proto)
    learner.learn(rec, np.array([0]), np.array([0]), np.array([0.0]), np.array([time_left]))
    bucket = min(time_left, 3) - 1
    slot = 0 * 3 + bucket  # moved first: role 0
    assert learner.tables[0, slot, 0, 1] == pytest.approx(expected)
    assert learner.wait_value[0, bucket] == pytest.approx(expected)  # lr = 1: replaced
    others = np.delete(learner.tables[0], slot, axis=0)
    assert not others.any()


def test_without_the_clock_a_failed_negotiation_is_worth_nothing():
    proto = Protocol(5, 5)
    learner = MarketQLearning(SELLER, 1, protocol=proto, lr=1.0)
    learner.tables[:] = 3.0
    learner.learn(_one_offer_then_rejected(proto), np.array([0]), np.array([0]), np.array([0.0]))
    assert learner.tables[0, 0, 0, 1] == 0.0
    assert learner.tables.shape == (1, 2, qtable.n_rows(proto), proto.n_actions)
