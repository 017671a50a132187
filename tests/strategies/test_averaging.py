"""The document's static method: both sides split the difference, and meet at 32."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.game.grid import PriceGrid
from market.game.play import Ranges, play
from market.game.rules import BUYER, SELLER, Protocol

LEGACY = Ranges(buyer=(0.0, 80.0), seller=(20.0, 100.0))


def legacy_negotiation(first: int = BUYER, rounds: int = 10):
    grid = PriceGrid.whole_units(0, 100)
    protocol = Protocol(grid.prices, rounds)
    record = play(
        protocol,
        grid,
        strategies.make("averaging", "seller"),
        strategies.make("averaging", "buyer"),
        LEGACY,
        first,
        np.random.default_rng(0),
    )
    return grid, record


def test_legacy_numbers_end_in_a_deal_at_32():
    grid, record = legacy_negotiation()
    assert record.deal
    assert grid.price(record.deal_level) == 32
    assert record.first == "buyer"
    assert record.rounds_used == 5


def test_legacy_offer_sequence_is_the_documents_arithmetic():
    """Buyer 0, Seller (100+0)//2 = 50, Buyer (0+50)//2 = 25, ... as the legacy code computes."""
    grid, record = legacy_negotiation()
    moves = [(m.side, m.action, int(grid.price(m.level))) for m in record.moves]
    assert moves == [
        ("buyer", "offer", 0),
        ("seller", "offer", 50),
        ("buyer", "offer", 25),
        ("seller", "offer", 37),
        ("buyer", "offer", 31),
        ("seller", "offer", 34),
        ("buyer", "offer", 32),
        ("seller", "offer", 33),
        ("buyer", "offer", 32),
        ("seller", "accept", 32),
    ]


def test_seller_first_opens_at_its_maximum_and_still_agrees():
    grid, record = legacy_negotiation(first=SELLER)
    assert record.moves[0].side == "seller" and grid.price(record.moves[0].level) == 100
    # the Buyer's first offer is the midpoint of its minimum and the Seller's offer
    assert grid.price(record.moves[1].level) == 50
    assert record.deal and 20 <= grid.price(record.deal_level) <= 80


def test_too_few_rounds_end_at_the_final_decision_inside_the_range():
    """With 2 rounds the Seller must decide on the Buyer's 25: inside 20-100, so it accepts."""
    grid, record = legacy_negotiation(rounds=2)
    assert [m.action for m in record.moves] == ["offer", "offer", "offer", "accept"]
    assert grid.price(record.deal_level) == 25


@pytest.mark.parametrize("side", ["seller", "buyer"])
def test_final_decision_rejects_outside_the_range(duel, side):
    """One round: the second mover accepts only an opening offer inside its range."""
    seller_range, buyer_range = ((4, 5), (1, 5)) if side == "seller" else ((1, 5), (1, 2))
    first = BUYER if side == "seller" else SELLER
    rec = duel("averaging", "averaging", rounds=1, seller_range=seller_range,
               buyer_range=buyer_range, first=first)
    # the opener offers its own extreme, outside the decider's range
    assert rec.level[0] == 0 and rec.actions[0, 1] == 6


def test_offers_never_leave_the_acceptable_range(duel):
    rec = duel("averaging", "averaging", prices=21, rounds=8, seller_range=(8, 15),
               buyer_range=(3, 12), first=np.array([0, 1]), n=2)
    for i in range(2):
        for m in rec.negotiation(i).moves:
            if m.action == "offer":
                lo, hi = (8, 15) if m.side == "seller" else (3, 12)
                assert lo <= m.level <= hi


def test_its_moves_against_a_hardliner_buyer(versus_test, expected_classifier):
    """The Buyer asks 1 throughout; the averaging Seller splits the difference each time
    ((11 + 1) // 2 = 6, then 3, then 2) and takes 1 when it is as good as its next ask."""
    versus_test("averaging", "hardliner", first="buyer", expected=[
        ("buyer", 1), ("seller", 6), ("buyer", 1), ("seller", 3), ("buyer", 1),
        ("seller", 2), ("buyer", 1), ("seller", "accept")])
    expected_classifier("averaging", memory="own last offer")
