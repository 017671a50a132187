"""The hardliner: never concedes.

It always offers its own extreme (Seller: the top of its range, Buyer: the
bottom) and accepts before the end only an offer at least as good as that
extreme, which costs it nothing. At the final decision it accepts exactly the
offers inside its range. As first mover it never holds the final decision,
so it trades only if the opponent comes all the way.
"""

from __future__ import annotations

import numpy as np

from market.game.jit import njit
from market.game.rules import SELLER, Observation
from strategies._ranges import extreme_and_reservation, offer_bounds1
from strategies.base import Classifier
from strategies.rule_based import RuleBased


class Hardliner(RuleBased):
    """Always asks for its extreme; accepts only at the final decision."""

    name = "hardliner"
    compiled = True
    classifier = Classifier()

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """Its own extreme, always."""
        extreme, _ = extreme_and_reservation(self.side, obs)
        return extreme


@njit(cache=True, inline="always")
def target1(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """:meth:`Hardliner.target` for one row: its own extreme."""
    lo, hi = offer_bounds1(side, lo, hi, P)
    return hi if side == SELLER else lo
