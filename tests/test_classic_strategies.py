"""Classic strategies from the bargaining literature: the behaviour their users rely on."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.game.rules import BUYER, SELLER, Observation, Protocol

CLASSIC = ["boulware", "linear", "conceder", "zi-c", "zi-u", "hardliner", "tit-for-tat"]


def offers_of(rec, i: int, side: str) -> list[int]:
    return [m.level for m in rec.negotiation(i).moves if m.side == side and m.action == "offer"]


def observe(protocol: Protocol, side: int, move: int, offer, lo, hi, own=None, prev=None,
            first=None) -> Observation:
    offer = np.atleast_1d(np.asarray(offer, dtype=np.int64))
    n = len(offer)
    full = lambda v, d: np.broadcast_to(np.asarray(d if v is None else v), (n,)).copy()  # noqa: E731
    return Observation(
        protocol=protocol, move=move, offer=offer, own=full(own, 0),
        first=full(first, move % 2 == 0), lo=full(lo, 1), hi=full(hi, protocol.prices),
        member=np.zeros(n, dtype=np.intp), prev_offer=full(prev, 0),
    )


@pytest.mark.parametrize("name", CLASSIC)
def test_registered_with_a_classifier(name):
    cls = strategies.get(name)
    assert set(cls.classifier) >= {"sides", "learns", "stochastic", "individually_rational"}
    assert cls.classifier["sides"] == ("seller", "buyer")
    assert not cls.classifier["learns"]


@pytest.mark.parametrize("name", CLASSIC)
@pytest.mark.parametrize("side", [SELLER, BUYER])
def test_empty_or_off_grid_ranges_give_legal_actions_and_no_loss(name, side, rng):
    """lo > hi or off the grid: every move legal, and the individually rational accept
    only what is no loss (Seller: at least its floor ``lo``; Buyer: at most its ceiling
    ``hi``), so nothing at all where no level of the grid qualifies."""
    P, T = 6, 4
    protocol = Protocol(P, T)
    player = strategies.make(name, side, 3, protocol)
    lo = np.array([4, 7, 3, 1])
    hi = np.array([3, 6, 0, 0])
    for move in range(2 * T):
        obs = observe(protocol, side, move, offer=np.array([0, 3, 6, 1]) if move else 0 * lo,
                      lo=lo, hi=hi, own=np.array([2, 6, 1, 1]) if move > 1 else 0)
        obs.member = np.array([0, 2, 1, 0])
        a = player.act(obs, rng)
        assert a.shape == (4,) and protocol.legal(move)[a].all()
        if player.classifier["individually_rational"]:
            acc = a == P
            if side == SELLER:
                assert (obs.offer[acc] >= lo[acc]).all() and not acc[1]  # row 1: lo > P
            else:
                assert (obs.offer[acc] <= hi[acc]).all() and not acc[2:].any()  # hi = 0


class TestTimeDependent:
    def test_linear_seller_concedes_evenly_to_its_reservation_then_accepts(self, duel):
        """P=11, T=6: targets 11, 9, 7, 5, 3 on a shared clock; the hardliner's 1 is accepted
        once it is as good as the next target (1)."""
        rec = duel("linear", "hardliner", prices=11, rounds=6, first=SELLER)
        assert offers_of(rec, 0, "seller") == [11, 9, 7, 5, 3]
        assert rec.negotiation(0).moves[-1].action == "accept" and rec.level[0] == 1

    def test_linear_buyer_mirrors_the_seller(self, duel):
        rec = duel("hardliner", "linear", prices=11, rounds=6, first=BUYER)
        assert offers_of(rec, 0, "buyer") == [1, 3, 5, 7, 9]
        assert rec.level[0] == 11

    def test_stops_at_the_reservation_level(self, duel):
        rec = duel("conceder", "hardliner", prices=11, rounds=6, seller_range=(6, 11),
                   first=SELLER)
        seller = offers_of(rec, 0, "seller")
        assert seller[0] == 11 and min(seller) == 6
        # the hardliner Buyer decides last and takes the floor, inside its range
        assert rec.level[0] == 6

    def test_boulware_holds_out_and_conceder_gives_early(self, duel):
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

    def test_accepts_an_offer_at_least_as_good_as_its_next_one(self):
        protocol = Protocol(11, 6)
        player = strategies.make("linear", "seller", 1, protocol)
        # at move 4 the linear seller would ask 7 (tau = 0.4)
        obs = observe(protocol, SELLER, 4, offer=[6, 7, 8], lo=1, hi=11, own=9)
        assert list(player.act(obs, np.random.default_rng(0))) == [6, 11, 11]

    def test_beta_per_member(self):
        protocol = Protocol(21, 6)
        player = strategies.make("linear", "seller", 2, protocol, beta=[0.2, 5.0])
        obs = observe(protocol, SELLER, 2, offer=[1, 1], lo=1, hi=21, own=21)
        obs.member = np.array([0, 1])
        boulware_like, conceder_like = player.act(obs, np.random.default_rng(0)) + 1
        assert boulware_like > conceder_like

    def test_rejects_a_bad_beta(self):
        with pytest.raises(ValueError, match="beta"):
            strategies.make("boulware", "seller", 1, beta=0.0)


class TestZeroIntelligenceConstrained:
    def test_offers_are_uniform_inside_the_range(self, rng):
        protocol = Protocol(10, 5)
        player = strategies.make("zi-c", "buyer", 1, protocol)
        n = 20_000
        obs = observe(protocol, BUYER, 0, offer=np.zeros(n), lo=3, hi=7)
        levels = player.act(obs, rng) + 1
        counts = np.bincount(levels, minlength=11)
        assert counts[:3].sum() == 0 and counts[8:].sum() == 0
        assert np.all(np.abs(counts[3:8] / n - 0.2) < 0.02)

    def test_accepts_more_often_the_better_the_offer(self, rng):
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

    def test_final_decision_is_exactly_the_range(self, rng):
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

    def test_quotes_cover_the_whole_grid_whatever_its_range(self, rng):
        protocol = Protocol(8, 5)
        player = strategies.make("zi-u", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 0, offer=np.zeros(5000), lo=6, hi=8)
        assert set(player.act(obs, rng) + 1) == set(range(1, 9))

    def test_can_lose_money(self, duel):
        rec = duel("zi-u", "zi-u", prices=20, rounds=5, seller_range=(12, 20),
                   buyer_range=(1, 8), n=400, seed=4)
        deals = rec.level[rec.level > 0]
        assert deals.size > 0 and ((deals < 12) | (deals > 8)).all()


class TestHardliner:
    @pytest.mark.parametrize("side,extreme", [("seller", 9), ("buyer", 3)])
    def test_always_asks_its_extreme(self, duel, side, extreme):
        seller, buyer = ("hardliner", "zi-u") if side == "seller" else ("zi-u", "hardliner")
        rec = duel(seller, buyer, prices=10, rounds=6, seller_range=(4, 9), buyer_range=(3, 8),
                   first=np.arange(50) % 2, n=50, seed=1)
        for i in range(50):
            assert set(offers_of(rec, i, side)) <= {extreme}

    def test_as_first_mover_trades_only_when_the_opponent_comes_all_the_way(self, duel):
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


class TestTitForTat:
    def test_concedes_as_much_as_the_opponent_did(self, duel):
        """Against a linear Seller (11, 9, 7) the Buyer answers 1, 3, 5; the Seller, whose
        next ask would be 5, takes it."""
        rec = duel("linear", "tit-for-tat", prices=11, rounds=6, first=SELLER)
        assert offers_of(rec, 0, "seller") == [11, 9, 7]
        assert offers_of(rec, 0, "buyer") == [1, 3, 5]
        assert rec.level[0] == 5

    def test_holds_firm_against_a_hardliner(self, duel):
        rec = duel("hardliner", "tit-for-tat", prices=11, rounds=6, buyer_range=(1, 8),
                   first=SELLER)
        assert set(offers_of(rec, 0, "buyer")) == {1}
        assert rec.level[0] == 0  # 11 is above its ceiling 8

    def test_retreats_when_the_opponent_retreats(self):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        # the Buyer went from 6 down to 4 (a retreat of 2): the Seller goes from 8 up to 10
        obs = observe(protocol, SELLER, 4, offer=4, prev=6, own=8, lo=1, hi=11)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 10
        # and never beyond its own range
        obs = observe(protocol, SELLER, 4, offer=2, prev=9, own=8, lo=1, hi=10)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 10

    def test_never_concedes_below_its_floor(self):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 4, offer=5, prev=1, own=7, lo=6, hi=11)
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 6

    def test_accepts_an_offer_as_good_as_its_next(self):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "buyer", 1, protocol)
        # Seller went 9 -> 7: the Buyer would go 4 -> 6; an offer of 6 is accepted
        obs = observe(protocol, BUYER, 5, offer=[7, 6], prev=[9, 8], own=4, lo=1, hi=11)
        assert list(player.act(obs, np.random.default_rng(0))) == [5, protocol.accept]

    def test_without_the_opponents_history_it_holds(self):
        protocol = Protocol(11, 6)
        player = strategies.make("tit-for-tat", "seller", 1, protocol)
        obs = observe(protocol, SELLER, 4, offer=5, own=8, lo=1, hi=11)
        obs.prev_offer = None
        assert player.act(obs, np.random.default_rng(0))[0] + 1 == 8
