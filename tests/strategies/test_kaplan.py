"""Kaplan's sniper: it waits at its extreme and jumps in on one of Rust, Miller and Palmer's
three triggers (``strategies/kaplan.py``'s table)."""

from __future__ import annotations

import numpy as np
import pytest

from market.game.rules import BUYER, SELLER, Turn
from market.sim.model import MarketModel
from strategies.kaplan import Kaplan
from strategies.rule_based import action

P = 21
#: a Buyer who can pay up to level 15 and a Seller who takes from level 6
BUYER_RANGE, SELLER_RANGE = (1, 15), (6, 21)


def kaplan_plays(side: int, step: int, rounds: int, offer: int, best: int, low: int, high: int,
                 quiet: int) -> str | int:
    """What Kaplan does at this turn of a book: "take", or the level it quotes."""
    lo, hi = SELLER_RANGE if side == SELLER else BUYER_RANGE
    turn = Turn(side, 2 * step + 1, P, rounds, offer, best, 0, lo, hi, 0.0, best, low, high,
                quiet)
    target = Kaplan.target(turn, None)
    a = action(turn, target, Kaplan.accepts(turn, target))
    return "take" if a == P else a + 1


@pytest.mark.parametrize(("side", "step", "rounds", "offer", "best", "low", "high", "quiet",
                          "plays", "why"), [
    # a Buyer (limit 15, extreme 1), periods of 10 steps
    (BUYER, 1, 10, 12, 3, 0, 0, 1, 1, "no trigger: it waits at its extreme"),
    (BUYER, 1, 10, 12, 11, 0, 0, 1, "take", "spread 1 < 10% of 12, profit 3 > 2% of 15"),
    (BUYER, 1, 10, 12, 11, 0, 11, 1, 1, "the same spread, but 12 is above last period's top"),
    (BUYER, 1, 10, 15, 14, 0, 0, 1, 1, "a narrow spread at its limit: no profit"),
    (BUYER, 1, 10, 12, 3, 12, 14, 1, "take", "the ask is at last period's lowest price"),
    (BUYER, 1, 10, 16, 3, 16, 18, 1, 15, "it jumps in, the ask above its limit: quotes 15"),
    (BUYER, 3, 10, 12, 3, 0, 0, 3, "take", "quiet 3 >= half of the 6 steps after this"),
    (BUYER, 3, 10, 12, 3, 0, 0, 2, 1, "quiet 2 < 3"),
    (BUYER, 12, 30, 12, 3, 0, 0, 5, "take", "waited 13 >= 2/3 of 17 left, a lull of 5"),
    (BUYER, 12, 30, 12, 3, 0, 0, 4, 1, "waited enough, but a lull of 4 only"),
    (BUYER, 9, 10, 15, 3, 0, 0, 0, "take", "the final decision: anything inside its range"),
    # a Seller (limit 6, extreme 21)
    (SELLER, 1, 10, 10, 11, 0, 0, 1, 21, "spread 1 is not below 10% of the bid 10"),
    (SELLER, 1, 10, 12, 13, 0, 0, 1, "take", "spread 1 < 10% of 12, profit 6 > 2% of 6"),
    (SELLER, 1, 10, 12, 13, 13, 0, 1, 21, "the same spread, but 12 is below last period's low"),
    (SELLER, 1, 10, 12, 20, 8, 12, 1, "take", "the bid is at last period's highest price"),
    (SELLER, 1, 10, 5, 20, 2, 5, 1, 6, "it jumps in, the bid below its limit: quotes 6"),
    (SELLER, 3, 10, 12, 20, 0, 0, 3, "take", "time: quiet 3 >= 3"),
    (SELLER, 1, 10, 12, 11, 0, 0, 1, "take", "a crossed spread (its ask below the bid)"),
])
def test_the_rule_on_a_book(side, step, rounds, offer, best, low, high, quiet, plays, why):
    assert kaplan_plays(side, step, rounds, offer, best, low, high, quiet) == plays, why


def test_bilateral_it_holds_out_a_third_of_the_rounds(versus_test, expected_classifier):
    """A Seller on levels 1..11, six rounds: its side's best quote is its own 11, so no spread
    is narrow; at round 2 the rounds without a deal (2) reach half of those after it (3), and
    it takes the linear Buyer's 6."""
    versus_test("kaplan", "linear", expected=[
        ("seller", 11), ("buyer", 2), ("seller", 11), ("buyer", 4), ("seller", 11),
        ("buyer", 6), ("seller", "accept")])
    expected_classifier("kaplan", memory="none (the book shows the previous period's prices)")


def test_bilateral_jumping_in_it_offers_its_limit(versus_test):
    """A Seller on 5..11 facing a Buyer who cannot pay above 4, ten rounds: at round 3 (its
    move 8) the rounds without a deal (3) reach half of those after it (6), and from then on
    it offers its limit, 5, which the Buyer never meets; the Buyer's final answer rejects."""
    versus_test("kaplan", "linear", rounds=10, seller_range=(5, 11), buyer_range=(1, 4),
                expected=[
                    ("seller", 11), ("buyer", 1), ("seller", 11), ("buyer", 1),
                    ("seller", 11), ("buyer", 1), ("seller", 11), ("buyer", 2),
                    ("seller", 5), ("buyer", 2), ("seller", 5), ("buyer", 2),
                    ("seller", 5), ("buyer", 3), ("seller", 5), ("buyer", 3),
                    ("seller", 5), ("buyer", 3), ("seller", 5), ("buyer", "reject")])


def _deal_steps(m: MarketModel) -> np.ndarray:
    """The step within its period of every deal the model made."""
    prices = m.datacollector.get_table_dataframe("prices")
    return ((prices["step"].to_numpy() - 1) % m.params.period).astype(int)


def test_in_a_market_of_snipers_the_clock_opens_trade():
    """Nobody quotes anything but their extremes until the steps without a trade reach half of
    those after the current one: at step 3 of a period of 10 (3 >= 6 / 2) the Kaplans start
    jumping in (each trade makes the market quiet again for those who come after it)."""
    m = MarketModel(institution="cda", prices=21, period=10, n_sellers=20, n_buyers=20,
                    seller_mix={"kaplan": 1}, buyer_mix={"kaplan": 1}, seed=3)
    m.run(30)
    steps = _deal_steps(m)
    assert steps.size > 0 and steps.min() == 3
