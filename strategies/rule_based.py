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

from market.game.jit import njit
from market.game.rules import SELLER, Observation
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


# --- the same template for one row, as the compiled market engine runs it -----------------------
# A rule-based strategy with a compiled decision writes its target for one row as
# ``target1(side, move, P, T, offer, own, prev, lo, hi, param, rng) -> level`` next to its
# ``target`` (``param``: its one per-member parameter, if any); :mod:`strategies.compiled`
# puts the target and these helpers together. Each mirrors the array method named.
@njit(cache=True, inline="always")
def final1(move: int, rounds: int) -> bool:
    """``not obs.legal[0]``: the last round's answer, where no offer can be made."""
    return move > 0 and (move - 1) // 2 == rounds - 1


@njit(cache=True, inline="always")
def acceptable1(side: int, offer: int, lo: int, hi: int) -> bool:
    """:meth:`Strategy.acceptable <strategies.base.Strategy.acceptable>` for one row."""
    if side == SELLER:
        return offer >= lo and offer > 0
    return offer <= hi and offer > 0


@njit(cache=True, inline="always")
def better_or_equal1(side: int, offer: int, target: int) -> bool:
    """:meth:`Strategy.better_or_equal <strategies.base.Strategy.better_or_equal>`, one row."""
    return offer >= target if side == SELLER else offer <= target


@njit(cache=True, inline="always")
def accepts1(side: int, move: int, rounds: int, offer: int, lo: int, hi: int,
             target: int) -> bool:
    """:meth:`RuleBased.accepts` for one row."""
    return acceptable1(side, offer, lo, hi) and (
        final1(move, rounds) or better_or_equal1(side, offer, target))


@njit(cache=True, inline="always")
def decide1(move: int, prices: int, rounds: int, offer: int, accept: bool) -> int:
    """:meth:`Strategy.decide <strategies.base.Strategy.decide>` for one row."""
    out = min(max(offer, 1), prices) - 1
    if move == 0:
        return out
    if final1(move, rounds):
        return prices if accept else prices + 1
    return prices if accept else out
