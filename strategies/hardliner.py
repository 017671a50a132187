"""The hardliner: never concedes.

It always offers its own extreme (Seller: the top of its range, Buyer: the
bottom) and accepts before the end only an offer at least as good as that
extreme, which costs it nothing. At the final decision it accepts exactly the
offers inside its range. As first mover it never holds the final decision,
so it trades only if the opponent comes all the way.
"""

from __future__ import annotations

from market.game.rules import Turn
from strategies.base import Classifier
from strategies.rule_based import RuleBased, extreme_and_reservation


class Hardliner(RuleBased):
    """Always asks for its extreme; accepts only at the final decision."""

    name = "hardliner"
    classifier = Classifier()

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """Its own extreme, always."""
        extreme, _ = extreme_and_reservation(turn)
        return extreme
