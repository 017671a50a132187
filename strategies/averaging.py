"""The document's static method: split the difference with the opponent.

First offer: the midpoint of the mover's own extreme (Seller: its maximum
acceptable price, Buyer: its minimum) and the opponent's offer, or that
extreme alone when the opponent has not offered yet. After that: the midpoint
of its own last offer and the opponent's last offer, rounded down as the
document does (``//``), never outside its acceptable range. It accepts an
offer at least as good as the one it would make next and, at the final
decision, accepts exactly the offers inside its range.
"""

from __future__ import annotations

from market.game.rules import SELLER, Turn
from strategies.base import Classifier
from strategies.rule_based import RuleBased, bounds


class Averaging(RuleBased):
    """Splits the difference with the opponent (the document's static method)."""

    name = "averaging"
    classifier = Classifier(
        memory="own last offer",
    )

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """The midpoint of its own last offer (or extreme) and the opponent's offer, rounded
        down, inside :func:`~strategies.rule_based.bounds` (a Seller never goes below its
        floor when no grid level lies inside its range)."""
        lo, hi = bounds(turn)
        extreme = hi if turn.side == SELLER else lo
        base = turn.own if turn.own > 0 else extreme
        mid = (base + turn.offer) // 2 if turn.offer > 0 else extreme
        return min(max(mid, lo), hi)
