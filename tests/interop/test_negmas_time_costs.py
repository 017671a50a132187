"""Time costs in NegMAS: discounted utility functions whose exponent is the offer on the table.

NegMAS discounts with ``ExpDiscountedUFun``; its usual exponent, the
mechanism's step, is a round of two offers here, so the adapter hands it an
:class:`~strategies.negmas_agents.OfferClock` instead. These tests read a
negotiator's own utility function at every move, in a mechanism the adapter
runs and inside our protocol (where a stand-in partner adds WAIT steps), and
check it is the undiscounted utility times d^k for the k-th offer.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("negmas")

from negmas.sao import AspirationNegotiator  # noqa: E402

from market.game.protocol import Side, negotiate  # noqa: E402
from market.game.rules import BUYER, SELLER, Protocol  # noqa: E402
from market.interop.negmas_adapter import StrategyNegotiator, run_negotiation  # noqa: E402
from strategies.negmas_agents import Session  # noqa: E402


class Recording(StrategyNegotiator):
    """Our strategy in NegMAS, noting its utility's discount at every offer it weighs."""

    def __call__(self, state, dest=None):  # noqa: ANN001, ANN204
        if self.strategy is None:
            self._start()
        offer = state.current_offer
        if offer is not None and float(self.ufun._ufun(offer)) > 0:
            first = self._first if self._first is not None else False
            move = 2 * state.step + (0 if first else 1)
            self.seen.append((move, float(self.ufun(offer)) / float(self.ufun._ufun(offer))))
        return super().__call__(state, dest)


@pytest.mark.parametrize("first", ["seller", "buyer"])
def test_the_adapters_mechanism_discounts_the_offer_on_the_table(first):
    ds, db = 0.9, 0.8
    sides = []
    for side in ("seller", "buyer"):
        neg = Recording("averaging", side=side, name=side, discounts=(ds, db))
        neg.seen = []
        sides.append(neg)
    out = run_negotiation(*sides, prices=20, rounds=6, first=first, seller_discount=ds,
                          buyer_discount=db)
    for neg, d in zip(sides, (ds, db), strict=True):
        assert neg.seen
        for move, ratio in neg.seen:  # at move m the offer on the table is the (m-1)-th
            assert ratio == pytest.approx(d ** (move - 1))
    # and the game is ours: the same deal, on the same move, as our protocol plays it
    P = 20
    record = negotiate(Protocol(P, 6, ds, db), Side.single(_averaging("seller", ds, db), 1, 1, P),
                       Side.single(_averaging("buyer", ds, db), 1, 1, P),
                       np.array([SELLER if first == "seller" else BUYER]),
                       np.random.default_rng(0))
    assert (out.level, out.n_moves) == (int(record.level[0]), int(record.n_moves[0]))


def _averaging(side: str, ds: float, db: float):  # noqa: ANN202
    import strategies

    return strategies.make("averaging", side, 1, Protocol(20, 6, ds, db))


class RecordingAspiration(AspirationNegotiator):
    """A NegMAS negotiator noting its utility's discount whenever it answers an offer."""

    seen: list[tuple[int, float]]

    def respond(self, state, source=None):  # noqa: ANN001, ANN201
        offer = state.current_offer
        base = float(self.ufun._ufun(offer))
        if base > 0:
            self.seen.append((self.session.clock.move, float(self.ufun(offer)) / base))
        return super().respond(state, source)


def test_inside_our_protocol_a_negmas_negotiator_discounts_per_offer_despite_wait_steps():
    protocol = Protocol(10, 6, 0.7, 0.85)
    for side, d in ((SELLER, 0.7), (BUYER, 0.85)):
        neg = RecordingAspiration()
        neg.seen = []
        session = Session(lambda neg=neg: neg, side, protocol, 1 if side == SELLER else 10,
                          first=False, seed=1)
        neg.session = session
        level = 5
        for move in range(1, 2 * protocol.rounds, 2):  # it answers second: odd moves
            a = session.move(move, level)
            if a >= protocol.prices:
                break
        assert neg.seen, "the negotiator never weighed an offer"
        for move, ratio in neg.seen:
            assert ratio == pytest.approx(d ** (move - 1))


def test_a_bad_factor_is_refused_by_the_adapter():
    with pytest.raises(ValueError, match="seller_discount"):
        run_negotiation("averaging", "averaging", prices=5, rounds=3, seller_discount=1.5)
