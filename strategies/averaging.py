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

import numpy as np

from market.game.jit import njit
from market.game.rules import SELLER, Observation
from strategies._ranges import offer_bounds, offer_bounds1
from strategies.base import Classifier
from strategies.rule_based import RuleBased


class Averaging(RuleBased):
    """Splits the difference with the opponent (the document's static method)."""

    name = "averaging"
    compiled = True
    classifier = Classifier(
        memory="own last offer",
    )

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The midpoint of its own last offer (or extreme) and the opponent's offer.

        Offers stay within :func:`~strategies._ranges.offer_bounds`: the
        acceptable range on the grid, or, when no grid level lies inside it,
        the side's reservation level (a Seller never goes below its floor).
        """
        lo, hi = offer_bounds(self.side, obs)
        extreme = hi if self.side == SELLER else lo
        base = np.where(obs.own > 0, obs.own, extreme)
        mid = np.where(obs.offer > 0, (base + obs.offer) // 2, extreme)
        return np.clip(mid, lo, hi)


@njit(cache=True, inline="always")
def target1(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """:meth:`Averaging.target` for one row (the compiled market engine's)."""
    lo, hi = offer_bounds1(side, lo, hi, P)
    extreme = hi if side == SELLER else lo
    base = own if own > 0 else extreme
    mid = (base + offer) // 2 if offer > 0 else extreme
    return min(max(mid, lo), hi)
