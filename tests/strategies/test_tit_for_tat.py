"""Tit-for-tat in concessions: the behaviour its users rely on."""

from __future__ import annotations

import numpy as np

import strategies
from market.game.rules import BUYER, SELLER, Protocol


class TestTitForTat:
    def test_concedes_as_much_as_the_opponent_did(self, offers_of, duel):
        """Against a linear Seller (11, 9, 7) the Buyer answers 1, 3, 5; the Seller, whose
        next ask would be 5, takes it."""
        rec = duel("linear", "tit-for-tat", prices=11, rounds=6, first=SELLER)
        assert offers_of(rec, 0, "seller") == [11, 9, 7]
        assert offers_of(rec, 0, "buyer") == [1, 3, 5]
        assert rec.level[0] == 5

    def test_holds_firm_against_a_hardliner(self, offers_of, duel):
        rec = duel("hardliner", "tit-for-tat", prices=11, rounds=6, buyer_range=(1, 8),
                   first=SELLER)
        assert set(offers_of(rec, 0, "buyer")) == {1}
        assert rec.level[0] == 0  # 11 is above its ceiling 8

    def test_retreats_when_the_opponent_retreats(self, observe):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        # the Buyer went from 6 down to 4 (a retreat of 2): the Seller goes from 8 up to 10
        obs = observe(protocol, SELLER, 4, offer=4, prev=6, own=8, lo=1, hi=11)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 10
        # and never beyond its own range
        obs = observe(protocol, SELLER, 4, offer=2, prev=9, own=8, lo=1, hi=10)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 10

    def test_never_concedes_below_its_floor(self, observe):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 4, offer=5, prev=1, own=7, lo=6, hi=11)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 6

    def test_accepts_an_offer_as_good_as_its_next(self, observe):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "buyer", 1, protocol)
        # Seller went 9 -> 7: the Buyer would go 4 -> 6; an offer of 6 is accepted
        obs = observe(protocol, BUYER, 5, offer=[7, 6], prev=[9, 8], own=4, lo=1, hi=11)
        assert list(player.act(obs, np.random.default_rng(0))) == [5, protocol.accept]

    def test_without_the_opponents_history_it_holds(self, observe):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 4, offer=5, own=8, lo=1, hi=11)
        obs.prev_offer = None
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 8


def test_its_moves_against_a_linear_seller_and_a_hardliner(versus_test, expected_classifier):
    """Against a linear Seller it concedes what the Seller concedes (2 a move) and is taken
    up at 5; against a hardliner it never moves, and walks away at the deadline."""
    versus_test("tit-for-tat", "linear", side="buyer", expected=[
        ("seller", 11), ("buyer", 1), ("seller", 9), ("buyer", 3), ("seller", 7),
        ("buyer", 5), ("seller", "accept")])
    versus_test("tit-for-tat", "hardliner", side="buyer", buyer_range=(1, 8), expected=[
        ("seller", 11), ("buyer", 1), ("seller", 11), ("buyer", 1), ("seller", 11),
        ("buyer", 1), ("seller", 11), ("buyer", 1), ("seller", 11), ("buyer", 1),
        ("seller", 11), ("buyer", "reject")])
    expected_classifier("tit-for-tat",
                        memory="the opponent's last two offers and its own last offer")
