"""Kaplan's sniper (Rust, Miller and Palmer 1994), the winner of the Santa Fe double auction
tournament: it lets the others bargain and steals the deal.

In the Santa Fe tournament Kaplan's trader stayed out of the market while
others negotiated, and jumped in, taking the best opposite quote, when that
quote was a bargain or when time was running out. Its rule here, in this
project's vocabulary (:class:`~market.game.rules.Turn`), the same in every
institution:

- it *waits*: its quote is its own extreme (a Seller the top of its range, a
  Buyer the bottom), which never crosses and is never a bargain to anyone
  who cannot trade at a loss;
- it *snipes*: it takes an offer inside its range when the offer is a
  bargain (in the better half of its range: a Buyer at or below the middle
  of the levels it can pay, a Seller at or above the middle of those it can
  take) or when time is running out (the last fifth of the rounds, the final
  decision included).

Rust et al.'s third trigger, a narrow bid-ask spread, needs the mover's own
side's best quote, which a :class:`~market.game.rules.Turn` does not carry;
their "cheaper than last period's lowest price" needs memory across periods.
In a double auction ``rounds`` is the trading period's steps, so "the last
fifth" is the period's last fifth; in bilateral bargaining it is the
negotiation's.
"""

from __future__ import annotations

from market.compiled.jit import njit
from market.game.rules import SELLER, Turn
from strategies.base import Classifier
from strategies.hardliner import Hardliner
from strategies.rule_based import acceptable, bounds, final

#: the share of the rounds, counted from the end, in which it takes any acceptable offer
LATE = 0.2


@njit(cache=True, inline="always")
def late(turn: Turn) -> bool:
    """Time is running out: the final decision, or a round in the last :data:`LATE` of them."""
    return final(turn) or (turn.move - 1) // 2 >= (1.0 - LATE) * turn.rounds


@njit(cache=True, inline="always")
def bargain(turn: Turn) -> bool:
    """The offer lies in the better half of the mover's range."""
    lo, hi = bounds(turn)
    if turn.side == SELLER:
        return 2 * (turn.offer - lo) >= hi - lo
    return 2 * (hi - turn.offer) >= hi - lo


class Kaplan(Hardliner):
    """Waits at its extreme (the hardliner's target); takes an acceptable offer that is a
    bargain, or any acceptable offer once time is running out."""

    name = "kaplan"
    classifier = Classifier()

    @staticmethod
    def accepts(turn: Turn, target: int) -> bool:
        """Inside its range, and a bargain or late."""
        return acceptable(turn) and (bargain(turn) or late(turn))
