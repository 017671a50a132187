"""The hardliner: the behaviour its users rely on."""

from __future__ import annotations

import numpy as np
import pytest

from market.game.rules import SELLER


class TestHardliner:
    @pytest.mark.parametrize("side,extreme", [("seller", 9), ("buyer", 3)])
    def test_always_asks_its_extreme(self, offers_of, duel, side, extreme):
        seller, buyer = ("hardliner", "zi-u") if side == "seller" else ("zi-u", "hardliner")
        rec = duel(seller, buyer, prices=10, rounds=6, seller_range=(4, 9), buyer_range=(3, 8),
                   first=np.arange(50) % 2, n=50, seed=1)
        for i in range(50):
            assert set(offers_of(rec, i, side)) <= {extreme}

    def test_as_first_mover_trades_only_when_the_opponent_comes_all_the_way(self, offers_of, duel):
        rec = duel("hardliner", "linear", prices=11, rounds=6, seller_range=(3, 9), first=SELLER)
        # the linear Buyer bids 2, 4, 6, 8 and takes the 9 once its next bid (10) is higher
        assert offers_of(rec, 0, "seller") == [9] * 5
        assert rec.level[0] == 9

    def test_as_second_mover_accepts_at_the_final_decision_inside_its_range(self, duel):
        rec = duel("averaging", "hardliner", prices=10, rounds=3, seller_range=(4, 10),
                   buyer_range=(2, 7), first=SELLER)
        moves = rec.negotiation(0).moves
        assert moves[-1].side == "buyer" and moves[-1].action == "accept"
        assert 2 <= rec.level[0] <= 7

    def test_two_hardliners_never_agree_when_extremes_differ(self, duel):
        rec = duel("hardliner", "hardliner", prices=10, rounds=5, seller_range=(5, 10),
                   buyer_range=(1, 6), first=np.array([0, 1]), n=2)
        # the second mover's final decision: the opponent's extreme is inside its range?
        # Seller-first: Buyer (1..6) sees 10 -> no. Buyer-first: Seller (5..10) sees 1 -> no.
        assert (rec.level == 0).all()


def test_its_moves_against_a_linear_buyer(versus_test, expected_classifier):
    """It asks 11 at every move; the linear Buyer climbs 2 a round and, at its final
    decision, accepts 11 rather than leave with nothing."""
    versus_test("hardliner", "linear", expected=[
        ("seller", 11), ("buyer", 2), ("seller", 11), ("buyer", 4), ("seller", 11),
        ("buyer", 6), ("seller", 11), ("buyer", 8), ("seller", 11), ("buyer", 10),
        ("seller", 11), ("buyer", "accept")])
    expected_classifier("hardliner")
