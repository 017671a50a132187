"""Zero-intelligence traders (ZI-C, ZI-U): the behaviour their users rely on."""

from __future__ import annotations

import numpy as np

import strategies
from market.game.rules import BUYER, SELLER, Protocol


class TestZeroIntelligenceConstrained:
    def test_offers_are_uniform_inside_the_range(self, observe, rng):
        protocol = Protocol(10, 5)
        player = strategies.make("zi-c", "buyer", 1, protocol)
        n = 20_000
        obs = observe(protocol, BUYER, 0, offer=np.zeros(n), lo=3, hi=7)
        levels = player.act(obs, rng) + 1
        counts = np.bincount(levels, minlength=11)
        assert counts[:3].sum() == 0 and counts[8:].sum() == 0
        assert np.all(np.abs(counts[3:8] / n - 0.2) < 0.02)

    def test_accepts_more_often_the_better_the_offer(self, observe, rng):
        """A quote is drawn in 3..7; the Seller accepts when the Buyer's offer crosses it."""
        protocol = Protocol(10, 5)
        player = strategies.make("zi-c", "seller", 1, protocol)
        n = 20_000
        rates = []
        for offer in (2, 3, 5, 7, 9):
            obs = observe(protocol, SELLER, 1, offer=np.full(n, offer), lo=3, hi=7)
            rates.append(np.mean(player.act(obs, rng) == protocol.accept))
        assert rates[0] == 0.0  # below its cost: never
        assert abs(rates[1] - 0.2) < 0.02 and abs(rates[2] - 0.6) < 0.02
        assert rates[3] == 1.0 and rates[4] == 1.0

    def test_final_decision_is_exactly_the_range(self, observe, rng):
        protocol = Protocol(10, 3)
        player = strategies.make("zi-c", "buyer", 1, protocol)
        obs = observe(protocol, BUYER, 5, offer=np.arange(1, 11), lo=2, hi=6)
        accepted = player.act(obs, rng) == protocol.accept
        assert list(np.flatnonzero(accepted) + 1) == [1, 2, 3, 4, 5, 6]

    def test_never_trades_at_a_loss(self, duel):
        rec = duel("zi-c", "zi-c", prices=20, rounds=5, seller_range=(8, 20),
                   buyer_range=(1, 14), first=np.arange(400) % 2, n=400, seed=3)
        deals = rec.level[rec.level > 0]
        assert deals.size > 100 and deals.min() >= 8 and deals.max() <= 14


class TestZeroIntelligenceUnconstrained:
    def test_not_individually_rational(self):
        assert strategies.get("zi-u").classifier["individually_rational"] is False

    def test_quotes_cover_the_whole_grid_whatever_its_range(self, observe, rng):
        protocol = Protocol(8, 5)
        player = strategies.make("zi-u", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 0, offer=np.zeros(5000), lo=6, hi=8)
        assert set(player.act(obs, rng) + 1) == set(range(1, 9))

    def test_can_lose_money(self, duel):
        rec = duel("zi-u", "zi-u", prices=20, rounds=5, seller_range=(12, 20),
                   buyer_range=(1, 8), n=400, seed=4)
        deals = rec.level[rec.level > 0]
        assert deals.size > 0 and ((deals < 12) | (deals > 8)).all()


def test_classifiers_state_only_what_differs(expected_classifier):
    expected_classifier("zi-c", stochastic=True)
    expected_classifier("zi-u", stochastic=True, individually_rational=False)
