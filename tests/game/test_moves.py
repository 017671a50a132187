"""The game's compiled rules (market.game.moves), as tables of expected values.

Every path that plays the game calls these functions; the equivalence tests
(kernel against the protocol, both market engines, environments against the
mechanism) check that the paths agree. These tables check that what they
agree on is the game of :mod:`market.game.rules`.
"""

from __future__ import annotations

import numpy as np
import pytest

from market.game import moves
from market.game.pressure import PRESSURE, Pressure
from market.game.rules import BUYER, SELLER, Protocol

P, T = 5, 3  # actions: offers 0..4 (levels 1..5), accept 5, reject 6


@pytest.mark.parametrize("move, first, side", [
    (0, SELLER, SELLER), (1, SELLER, BUYER), (2, SELLER, SELLER),
    (0, BUYER, BUYER), (1, BUYER, SELLER), (5, BUYER, SELLER),
])
def test_the_first_mover_moves_at_even_moves(move, first, side):
    assert moves.mover(move, first) == side


@pytest.mark.parametrize("move, block", [
    (0, (0, P)),          # the opening: offers only
    (1, (0, P + 2)),      # round 0 observed: everything
    (4, (0, P + 2)),      # round 1
    (5, (P, P + 2)),      # round T - 1 = 2 observed: accept or reject only
    (2 * T - 1, (P, P + 2)),
])
def test_legal_actions_form_one_block(move, block):
    assert moves.legal_block(move, P, T) == block
    mask = Protocol(P, T).legal(move)
    assert (np.flatnonzero(mask).min(), np.flatnonzero(mask).max() + 1) == block


@pytest.mark.parametrize("action, offer, end", [
    (0, 3, moves.GOES_ON), (4, 3, moves.GOES_ON),  # an offer: the talks go on
    (P, 3, 3),                                     # accept: a deal at the offer on the table
    (P + 1, 3, moves.NO_DEAL),                     # reject: no deal
])
def test_what_an_action_does(action, offer, end):
    assert moves.outcome(action, P, offer) == end


def test_an_offer_puts_its_level_on_the_table():
    assert [moves.offered(a) for a in range(P)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("move, q, risk", [
    (0, 0.5, False),  # the opening offer always reaches the responder
    (1, 0.5, True), (7, 0.5, True),
    (3, 0.0, False),  # no risk: nothing is drawn
])
def test_a_breakdown_is_drawn_after_counter_offers_only(move, q, risk):
    pressure = Pressure(breakdown=q)
    assert moves.at_risk(move, pressure) is risk
    assert moves.survival(move, pressure) == (1.0 - q if risk else 1.0)
    if risk:
        assert moves.breaks(q - 1e-9, move, pressure) and not moves.breaks(q, move, pressure)


@pytest.mark.parametrize("gain, side, k, pressure, scale, want", [
    (0.6, SELLER, 0, Pressure(0.5, 0.5, 0.0, 0.1, 0.1), 1.0, 0.6),  # the opening: no delay
    (0.6, SELLER, 2, Pressure(0.5, 1.0), 1.0, 0.6 * 0.25),
    (0.6, BUYER, 2, Pressure(0.5, 1.0), 1.0, 0.6),                  # the Buyer's factor is 1
    (0.6, BUYER, 3, Pressure(1.0, 0.9, 0.0, 0.0, 0.05), 1.0, 0.6 * 0.9**3 - 3 * 0.05),
    (30.0, SELLER, 2, Pressure(1.0, 1.0, 0.0, 0.02, 0.0), 80.0, 30.0 - 2 * 0.02 * 80.0),
    (0.6, SELLER, 4, Pressure(breakdown=0.5), 1.0, 0.6),  # a breakdown risk: the deal whole
])
def test_what_a_deal_is_worth(gain, side, k, pressure, scale, want):
    assert moves.worth(gain, side, k, pressure, scale) == pytest.approx(want, abs=1e-15)


def test_a_protocol_s_rewards_are_the_rule_s_worth():
    pr = Protocol(P, T, 0.9, 0.8, 0.2, 0.01, 0.02)
    level, move = np.array([1, 3, 5, 2]), np.array([1, 2, 4, 5])
    s, b = pr.deal_rewards(level, move)
    for i in range(level.size):
        k = move[i] - 1
        assert s[i] == moves.worth(level[i] / P, SELLER, k, pr.pressure, 1.0)
        assert b[i] == moves.worth(1 - level[i] / P, BUYER, k, pr.pressure, 1.0)


def test_the_record_holds_every_declared_kind_of_pressure_in_order():
    pr = Protocol(P, T, 0.9, 0.8, 0.2, 0.01, 0.02)
    assert pr.pressure == Pressure(0.9, 0.8, 0.2, 0.01, 0.02)
    assert Pressure._fields == tuple(d.name for d in PRESSURE)
    assert Pressure() == Protocol(P, T).pressure


def test_one_move_of_many_rows_plays_the_rules_in_order():
    """Three rows at move 1 (Seller opened with level 2, 3, 4): the Buyer counter-offers,
    accepts, rejects; with a breakdown risk the counter-offer alone draws."""
    n = 3
    first = np.zeros(n, np.int64)
    last = np.zeros((2, n), np.int64)
    last[SELLER] = [2, 3, 4]
    prev = np.zeros((2, n), np.int64)
    actions, level, n_moves = np.full((n, 2 * T), -1, np.int32), np.zeros(n, np.int64), \
        np.zeros(n, np.int64)
    running = np.arange(n)
    rng = np.random.default_rng(0)
    still = moves.play_move(1, P, Pressure(breakdown=0.999999), running, n, np.array([0, P, P + 1]),
                            (first, last, prev), (actions, level, n_moves), rng)
    assert still == 0  # the counter-offer broke down (u < Q), the others ended
    assert list(level) == [0, 3, 0] and list(n_moves) == [2, 2, 2]
    assert last[BUYER, 0] == 1 and list(actions[:, 1]) == [0, P, P + 1]
    assert rng.bit_generator.state != np.random.default_rng(0).bit_generator.state  # one draw
