"""The template of a rule-based strategy: a target level and an accept rule, written once.

Most bargaining tactics in the literature say two things: which level the
mover would offer now (its *target*), and which offers it takes. A
rule-based strategy states exactly that, for one negotiation row
(:class:`~market.game.rules.Turn`: scalars in, a level out), as a function
that numba compiles::

    class Midpoint(RuleBased):
        name = "midpoint"

        @staticmethod
        def target(turn, rng):
            lo, hi = bounds(turn)
            return (lo + hi) // 2

That one function is the strategy: the template turns its level and the
accept rule into legal actions (an offer at move 0, accept or reject in the
last round, otherwise accept or counter-offer the target, :func:`action`),
and every form the project runs is derived from it (:mod:`strategies.compiled`):
the batch decision of the lockstep path and the two-agent game, the market
engine, the tournament and the environments. Helpers a rule calls must be
compiled too (``market.compiled.jit.njit``); those below are.

The default accept rule is the one shared by the classic tactics: take an
offer inside the mover's reservation range that is at least as good as its
own target, and, at the final decision (where no counter-offer is left),
any offer inside the range.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from market.compiled.jit import njit
from market.errors import UsageError
from market.game.moves import bilateral_view
from market.game.rules import SELLER, Observation, Turn
from strategies._ranges import offer_bounds1
from strategies.base import PARAMS, param_at
from strategies.compiled import Compiled


@njit(cache=True, inline="always")
def bounds(turn: Turn) -> tuple[int, int]:
    """Where the mover may offer: its acceptable range on the grid (never empty; the rule of
    ``strategies/_ranges.py``, which every strategy that offers shares)."""
    return offer_bounds1(turn.side, turn.lo, turn.hi, turn.prices)


@njit(cache=True, inline="always")
def extreme_and_reservation(turn: Turn) -> tuple[int, int]:
    """The mover's opening level and the level it concedes down (or up) to."""
    lo, hi = bounds(turn)
    return (hi, lo) if turn.side == SELLER else (lo, hi)


@njit(cache=True, inline="always")
def final(turn: Turn) -> bool:
    """The last round's answer, where no offer can be made."""
    return turn.move > 0 and (turn.move - 1) // 2 == turn.rounds - 1


@njit(cache=True, inline="always")
def acceptable(turn: Turn) -> bool:
    """Is the opponent's offer inside the mover's reservation range?"""
    if turn.side == SELLER:
        return turn.offer >= turn.lo and turn.offer > 0
    return turn.offer <= turn.hi and turn.offer > 0


@njit(cache=True, inline="always")
def better_or_equal(side: int, offer: int, target: int) -> bool:
    """Is ``offer`` at least as good for ``side`` as ``target``?"""
    return offer >= target if side == SELLER else offer <= target


@njit(cache=True, inline="always")
def accepts(turn: Turn, target: int) -> bool:
    """The classic accept rule: inside the range and at least the target, or at the final
    decision anything inside the range."""
    return acceptable(turn) and (final(turn) or better_or_equal(turn.side, turn.offer, target))


@njit(cache=True, inline="always")
def action(turn: Turn, target: int, accept: bool) -> int:
    """A wished-for level and an accept flag as a legal action index: at move 0 an offer,
    at the final decision accept or reject, otherwise accept or offer the level. A target
    off the grid (where an offer could be made) is an illegal action, -1, which every engine
    refuses naming the strategy: clamped onto the grid, it made deals the rule never chose
    (a promised-rational trader's at a loss) in games its contract's samples did not try."""
    prices = turn.prices
    if final(turn):
        return prices if accept else prices + 1
    if not 1 <= target <= prices:
        return -1
    if turn.move == 0:
        return target - 1
    return prices if accept else target - 1


@njit(cache=True, inline="always")
def member_param(fstore: np.ndarray, layout: np.ndarray, g: int, member: int) -> float:
    """The parameter every rule reads as ``turn.param``: ``params[member, 0]`` of population
    ``g``, or 0.0 if the population has none."""
    if layout[g, PARAMS + 2] > 0:
        return fstore[param_at(layout, g, member, 0)]
    return 0.0


@njit(cache=True)
def member_params(groups: np.ndarray, members: np.ndarray, g0: int, st: tuple) -> np.ndarray:
    """:func:`member_param` of each row (population ``g0 + groups[i]``, member ``members[i]``),
    read once before a loop that decides on scalars: a store's arrays handed to an inlined
    call inside that loop would cost a reference count per array and move."""
    fstore, istore, layout, config = st
    out = np.zeros(groups.size)
    for i in range(groups.size):
        out[i] = member_param(fstore, layout, g0 + groups[i], members[i])
    return out


class RuleBased(Compiled):
    """A strategy defined by its ``target`` rule and, optionally, its ``accepts`` rule.

    Both are functions of one row that numba compiles (plain functions or
    ``njit``-decorated, set as ``staticmethod``\\ s): ``target(turn, rng) ->
    level`` and ``accepts(turn, target) -> bool``. ``rng`` is the market's
    generator (numba's ``Generator``: ``rng.random()``, ``rng.integers(lo,
    hi)``, or :func:`market.game.numeric.integer` for the same draw without
    numba's one-element array); a rule whose classifier says it is not
    stochastic must not draw.
    """

    target: ClassVar[Callable[..., int] | None] = None
    accepts: ClassVar[Callable[..., bool]] = staticmethod(accepts)

    def python_rows(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The rule run as plain Python, row by row: how the lockstep path still plays a rule
        that numba cannot compile (slow, but the same moves)."""
        target_fn = getattr(self.target, "py_func", self.target)
        accepts_fn = getattr(self.accepts, "py_func", self.accepts)
        params = np.asarray(self.kernel_state().params)
        n = len(obs)
        member = np.broadcast_to(np.asarray(obs.member), (n,))
        lo, hi = np.broadcast_to(obs.lo, (n,)), np.broadcast_to(obs.hi, (n,))
        prev = np.zeros(n, np.int64) if obs.prev_offer is None else obs.prev_offer
        out = np.empty(n, dtype=np.int64)
        for r in range(n):
            param = float(params[member[r], 0]) if params.shape[1] > 0 else 0.0
            own = int(obs.own[r])
            turn = Turn(self.side, int(obs.move), int(obs.protocol.prices),
                        int(obs.protocol.rounds), int(obs.offer[r]), own, int(prev[r]),
                        int(lo[r]), int(hi[r]), param, *bilateral_view(own, int(obs.move)))
            try:
                target = int(target_fn(turn, rng))
                out[r] = action(turn, target, bool(accepts_fn(turn, target)))
            except Exception as exc:  # the user's rule itself is broken: say so in one line
                raise UsageError(f"strategy {self.name!r}: its rule failed "
                                 f"({type(exc).__name__}: {exc})") from None
        return out


__all__ = ["RuleBased", "acceptable", "accepts", "action", "better_or_equal", "bounds",
           "extreme_and_reservation", "final"]
