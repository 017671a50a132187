"""The template of a rule-based strategy: a target level and an accept rule.

Most bargaining tactics in the literature say two things: which level the
mover would offer now (its *target*), and which offers it takes. The
template turns those into legal actions (an offer at move 0, accept or
reject in the last round, otherwise accept or counter-offer the target), so
each rule-based strategy states only its rule.

The default accept rule is the one shared by the classic tactics: take an
offer inside the mover's reservation range that is at least as good as its
own target, and, at the final decision (where no counter-offer is left),
any offer inside the range.
"""

from __future__ import annotations

import numpy as np

from market.game.rules import Observation
from strategies._ranges import extreme_and_reservation, offer_bounds
from strategies.base import Strategy

#: where a rule may place its offers, re-exported for strategies written outside the package
__all__ = ["RuleBased", "extreme_and_reservation", "offer_bounds"]


class RuleBased(Strategy):
    """A strategy defined by :meth:`target` and, optionally, :meth:`accepts`."""

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The level this mover would offer now, one per row (inside ``1..P``)."""
        raise NotImplementedError

    def accepts(self, obs: Observation, target: np.ndarray) -> np.ndarray:
        """Whether to take the opponent's offer: inside the range and at least the target,
        or at the final decision anything inside the range."""
        final = not obs.legal[0]
        return self.acceptable(obs) & (final | self.better_or_equal(obs.offer, target))

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        target = self.target(obs, rng)
        return self.decide(obs, target, self.accepts(obs, target))
