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

from market.game.numeric import integer
from market.game.rules import Turn
from strategies.base import Classifier
from strategies.rule_based import RuleBased, better_or_equal, bounds


class ZeroIntelligenceConstrained(RuleBased):
    """Random quotes inside its own range; never trades at a loss."""

    name = "zi-c"
    classifier = Classifier(
        stochastic=True,
    )

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """One uniform random level inside its range (the default accept rule then takes a
        crossing offer inside the range, and at the final decision any offer inside it)."""
        lo, hi = bounds(turn)
        return integer(rng, lo, hi + 1)


class ZeroIntelligenceUnconstrained(RuleBased):
    """Random quotes over the whole grid; may trade at a loss."""

    name = "zi-u"
    classifier = Classifier(stochastic=True, individually_rational=False)

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """One uniform random level anywhere on the grid."""
        return integer(rng, 1, turn.prices + 1)

    @staticmethod
    def accepts(turn: Turn, target: int) -> bool:
        """The crossing test alone, at every move, the final one too."""
        return turn.offer > 0 and better_or_equal(turn.side, turn.offer, target)
