"""Tit-for-tat in concessions (after Faratin, Sierra & Jennings 1998).

The mover opens at its own extreme and then concedes, from its own last
offer, as many levels as the opponent conceded between its last two offers;
when the opponent retreats, it retreats as much. Offers stay inside its own
range. Faratin et al.'s *relative* tit-for-tat copies the opponent's
concession as a ratio of prices; level numbers on a grid carry no ratio
meaning, so this copies the number of levels (their one-step imitation,
``delta = 1``), which is what "concede as much as the opponent did" means on
a grid.

It needs the opponent's offer before its last one, which the protocol
passes as ``Turn.prev``.

Acceptance: an offer at least as good as the level it would offer now and
inside its range; at the final decision, exactly the offers inside its range.

Like any pure imitator it never concedes first: two tit-for-tat traders (or
one against a hardliner) stay at their extremes, and trade only if the final
decider finds the opener's extreme inside its range.
"""

from __future__ import annotations

from market.game.rules import SELLER, Turn
from strategies.base import Classifier
from strategies.rule_based import RuleBased, bounds


class TitForTat(RuleBased):
    """Concedes as many levels as the opponent just conceded."""

    name = "tit-for-tat"
    classifier = Classifier(
        memory="the opponent's last two offers and its own last offer",
    )

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """Its extreme at first, then its own last offer moved by the opponent's last
        concession (``prev`` to ``offer``), inside its range."""
        lo, hi = bounds(turn)
        extreme = hi if turn.side == SELLER else lo
        moved = 0  # the opponent's concession, positive when it moved toward this mover
        if turn.prev > 0 and turn.offer > 0:
            moved = turn.offer - turn.prev if turn.side == SELLER else turn.prev - turn.offer
        step = -moved if turn.side == SELLER else moved
        x = turn.own + step if turn.own > 0 else extreme
        return min(max(x, lo), hi)
