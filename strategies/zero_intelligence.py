"""Zero-intelligence traders of Gode & Sunder (1993), carried over to alternating offers.

In Gode & Sunder's double auction a ZI trader draws a random quote and a
trade happens when a new quote crosses the standing one, at the standing
price. Here, at each move the trader draws a quote uniformly among levels
and:

- if the opponent's standing offer is at least as good as the quote (it
  *crosses*), it accepts that offer (the trade is at the opponent's price);
- otherwise it offers the quote.

``zi-c`` (constrained) draws its quotes inside its own acceptable range, so
it can never trade at a loss; at the final decision, where no quote can be
made, it accepts exactly the offers inside its range. The chance that it
accepts an acceptable offer grows with how good that offer is, rather than
being 1 for every acceptable offer: accepting everything acceptable would
end most negotiations at the first acceptable offer, which is a
trader with a reservation rule, not a random quoter.

``zi-u`` (unconstrained) draws quotes over the whole grid, whatever its
range, and decides the final move by the same crossing test: it may buy
above its value or sell below its cost (not individually rational).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from market.game.jit import njit
from market.game.rules import Observation
from strategies._ranges import offer_bounds, offer_bounds1
from strategies.base import Classifier
from strategies.rule_based import RuleBased, better_or_equal1


class ZeroIntelligence(RuleBased):
    """Shared rule; ``constrained`` decides where quotes are drawn."""

    constrained: ClassVar[bool] = True

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """One uniform random level per row: inside the range (ZI-C) or anywhere (ZI-U)."""
        if self.constrained:
            lo, hi = offer_bounds(self.side, obs)
        else:
            lo = np.ones(len(obs), dtype=np.int64)
            hi = np.full(len(obs), obs.protocol.prices, dtype=np.int64)
        return rng.integers(lo, hi + 1)

    def accepts(self, obs: Observation, target: np.ndarray) -> np.ndarray:
        """The quote crosses the standing offer. ZI-C also needs the offer inside its range
        and decides the final move by its range alone (no quote can be made there); ZI-U
        decides every move, the final one too, by the crossing test."""
        if self.constrained:
            return super().accepts(obs, target)
        return (obs.offer > 0) & self.better_or_equal(obs.offer, target)


class ZeroIntelligenceConstrained(ZeroIntelligence):
    """Random quotes inside its own range; never trades at a loss."""

    name = "zi-c"
    compiled = True
    constrained = True
    classifier = Classifier(
        stochastic=True,
    )


class ZeroIntelligenceUnconstrained(ZeroIntelligence):
    """Random quotes over the whole grid; may trade at a loss."""

    name = "zi-u"
    compiled = True
    constrained = False
    classifier = Classifier(stochastic=True, individually_rational=False)


@njit(cache=True, inline="always")
def target1_constrained(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """ZI-C's quote for one row: the same draw as ``rng.integers(lo, hi + 1)`` row by row."""
    lo, hi = offer_bounds1(side, lo, hi, P)
    return rng.integers(lo, hi + 1)


@njit(cache=True, inline="always")
def target1_unconstrained(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """ZI-U's quote for one row: anywhere on the grid."""
    return rng.integers(1, P + 1)


@njit(cache=True, inline="always")
def accepts1_unconstrained(side: int, offer: int, target: int) -> bool:
    """ZI-U's crossing test for one row, the final move included."""
    return offer > 0 and better_or_equal1(side, offer, target)
