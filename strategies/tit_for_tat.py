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
passes as ``Observation.prev_offer``; without it (an older caller) it holds
its last offer.

Acceptance: an offer at least as good as the level it would offer now and
inside its range; at the final decision, exactly the offers inside its range.

Like any pure imitator it never concedes first: two tit-for-tat traders (or
one against a hardliner) stay at their extremes, and trade only if the final
decider finds the opener's extreme inside its range.
"""

from __future__ import annotations

import numpy as np

from market.game.jit import njit
from market.game.rules import SELLER, Observation
from strategies._ranges import offer_bounds, offer_bounds1
from strategies.base import Classifier
from strategies.rule_based import RuleBased


class TitForTat(RuleBased):
    """Concedes as many levels as the opponent just conceded."""

    name = "tit-for-tat"
    compiled = True
    classifier = Classifier(
        memory="the opponent's last two offers and its own last offer",
    )

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The level this mover would offer now."""
        lo, hi = offer_bounds(self.side, obs)
        extreme = hi if self.side == SELLER else lo
        prev = getattr(obs, "prev_offer", None)
        prev = np.zeros_like(obs.offer) if prev is None else prev
        known = (prev > 0) & (obs.offer > 0)
        # the opponent's concession, positive when it moved toward this mover
        moved = obs.offer - prev if self.side == SELLER else prev - obs.offer
        moved = np.where(known, moved, 0)
        step = -moved if self.side == SELLER else moved
        x = np.where(obs.own > 0, obs.own + step, extreme)
        return np.clip(x, lo, hi)


@njit(cache=True, inline="always")
def target1(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """:meth:`TitForTat.target` for one row (``prev``: the opponent's offer before ``offer``)."""
    lo, hi = offer_bounds1(side, lo, hi, P)
    extreme = hi if side == SELLER else lo
    moved = 0
    if prev > 0 and offer > 0:
        moved = offer - prev if side == SELLER else prev - offer
    step = -moved if side == SELLER else moved
    x = own + step if own > 0 else extreme
    return min(max(x, lo), hi)
