"""Time-dependent tactics (Boulware, linear, conceder): the behaviour their users rely on."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.game.rules import BUYER, SELLER, Protocol


class TestTimeDependent:
    def test_linear_seller_concedes_evenly_to_its_reservation_then_accepts(self, offers_of, duel):
        """P=11, T=6: targets 11, 9, 7, 5, 3 on a shared clock; the hardliner's 1 is accepted
        once it is as good as the next target (1)."""
        rec = duel("linear", "hardliner", prices=11, rounds=6, first=SELLER)
        assert offers_of(rec, 0, "seller") == [11, 9, 7, 5, 3]
        assert rec.negotiation(0).moves[-1].action == "accept" and rec.level[0] == 1

    def test_linear_buyer_mirrors_the_seller(self, offers_of, duel):
        rec = duel("hardliner", "linear", prices=11, rounds=6, first=BUYER)
        assert offers_of(rec, 0, "buyer") == [1, 3, 5, 7, 9]
        assert rec.level[0] == 11

    def test_stops_at_the_reservation_level(self, offers_of, duel):
        rec = duel("conceder", "hardliner", prices=11, rounds=6, seller_range=(6, 11),
                   first=SELLER)
        seller = offers_of(rec, 0, "seller")
        assert seller[0] == 11 and min(seller) == 6
        # the hardliner Buyer decides last and takes the floor, inside its range
        assert rec.level[0] == 6

    def test_boulware_holds_out_and_conceder_gives_early(self, offers_of, duel):
        """At every move the Boulware asks at least what linear asks, the conceder at most."""
        seqs = {
            name: offers_of(duel(name, "hardliner", prices=21, rounds=8, first=SELLER), 0,
                            "seller")
            for name in ("boulware", "linear", "conceder")
        }
        b, lin, c = seqs["boulware"], seqs["linear"], seqs["conceder"]
        k = min(len(b), len(lin), len(c))
        assert all(b[i] >= lin[i] >= c[i] for i in range(k))
        assert b[1] == 21 and c[1] < 10  # Boulware still at the top, conceder past halfway
        assert all(x >= y for x, y in zip(b, b[1:], strict=False))  # never retreats

    def test_accepts_an_offer_at_least_as_good_as_its_next_one(self, observe):
        protocol = Protocol(11, 6)
        player = strategies.make("linear", "seller", 1, protocol)
        # at move 4 the linear seller would ask 7 (tau = 0.4)
        obs = observe(protocol, SELLER, 4, offer=[6, 7, 8], lo=1, hi=11, own=9)
        assert list(player.act(obs, np.random.default_rng(0))) == [6, 11, 11]

    def test_beta_per_member(self, observe):
        protocol = Protocol(21, 6)
        player = strategies.make("linear", "seller", 2, protocol, beta=[0.2, 5.0])
        obs = observe(protocol, SELLER, 2, offer=[1, 1], lo=1, hi=21, own=21)
        obs.member = np.array([0, 1])
        boulware_like, conceder_like = player.act(obs, np.random.default_rng(0)) + 1
        assert boulware_like > conceder_like

    def test_rejects_a_bad_beta(self):
        with pytest.raises(ValueError, match="beta"):
            strategies.make("boulware", "seller", 1, beta=0.0)


def test_boulware_against_conceder(versus_test, expected_classifier):
    """Boulware holds its extreme while it can; the Conceder gives most of the way early
    (7 at once, then one level a round), and Boulware takes 10 once its own ask, coming
    down late, would be no better."""
    versus_test("boulware", "conceder", expected=[
        ("seller", 11), ("buyer", 7), ("seller", 11), ("buyer", 8), ("seller", 11),
        ("buyer", 9), ("seller", 11), ("buyer", 10), ("seller", "accept")])
    for name in ("boulware", "linear", "conceder"):
        expected_classifier(name, memory="none (the clock and its own range)")
