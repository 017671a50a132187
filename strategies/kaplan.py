"""Kaplan's sniper (Rust, Miller and Palmer 1994), the winner of the Santa Fe double auction
tournament: it lets the others bargain and steals the deal.

Todd Kaplan's trader waits in the background, its quote out of the way, and
jumps in, taking the best opposite quote, when one of three things holds.
Its rule here, in this project's vocabulary (:class:`~market.game.rules.Turn`,
prices as levels), for a Buyer; a Seller's is its mirror image:

==============================  ===============================================================
trigger                         a Buyer jumps in when (``ask``: ``offer``, ``bid``: ``own_best``)
==============================  ===============================================================
a price better than last        ``ask <= prior_low``: the ask is no higher than the lowest price
period's                        traded in the previous period (one is known)
a narrow spread, a profit       ``ask - bid < SPREAD * ask`` and ``hi - ask > PROFIT * hi``, and
                                ``ask <= prior_high`` when a previous period is known
time running out                no trade for ``QUIET`` of the steps left (``quiet >= QUIET *
                                left``); or it has waited ``WAITED`` of the steps left
                                (``step + 1 >= WAITED * left``) and no trade for ``LULL``
                                steps; or the final decision
==============================  ===============================================================

(``hi``: the Buyer's limit, the highest level it can pay; ``step``: the
round, the period's step in a book, from 0; ``left = rounds - step - 1``, the
steps after this one: the tournament's clock, which counted from 1.) Jumping in, it
takes the offer if it lies inside its range, else quotes its own limit; the
rest of the time it waits at its extreme (a Buyer the bottom of its range, a
Seller the top), which never crosses and, where nobody stands, opens the book.
The Seller's triggers: ``bid >= prior_high``; ``ask - bid < SPREAD * bid``
with ``bid - lo > PROFIT * lo`` and ``bid >= prior_low``; time as the Buyer's.
A crossed spread (a bid above the ask: in bilateral bargaining, an offer
better than the mover's own) is the narrowest.

The thresholds are the tournament's Kaplan (10%, 2%, half, two thirds and
five steps). Its traders held several units a period, so "waited" counted
from its own last trade; each trader here holds one, so it counts from the
period's start. Percentages are taken on levels, as :mod:`strategies.zip`
takes its margins: on a grid that starts near zero (the market's drawn
values on 0-100) a level's ratio is its price's.

In bilateral bargaining a mover's side is itself: ``own_best`` is its own
last offer, no previous period is known, and ``quiet`` is the round, so a
Kaplan bargainer holds out for about the first third of the rounds
(``QUIET``); then it takes any offer inside its range and otherwise offers
its limit.
"""

from __future__ import annotations

from market.compiled.jit import njit
from market.game.rules import SELLER, Turn
from strategies.base import Classifier
from strategies.rule_based import RuleBased, acceptable, extreme_and_reservation, final

#: the spread, as a share of the opposite quote, below which it jumps in (with a profit)
SPREAD = 0.10
#: the profit, as a share of its limit, that a narrow spread must leave it
PROFIT = 0.02
#: the share of the steps left that, passed without a trade, means time is running out
QUIET = 0.5
#: the share of the steps left that it may wait before it jumps in after a lull ...
WAITED = 2.0 / 3.0
#: ... of this many steps without a trade
LULL = 5


@njit(cache=True, inline="always")
def better_than_last_period(turn: Turn) -> bool:
    """The offer beats every price of the previous period (one is known): a Buyer's ask at or
    below its lowest, a Seller's bid at or above its highest."""
    if turn.side == SELLER:
        return turn.prior_high > 0 and turn.offer >= turn.prior_high
    return turn.prior_low > 0 and turn.offer <= turn.prior_low


@njit(cache=True, inline="always")
def narrow_spread(turn: Turn) -> bool:
    """The best quotes of both sides lie within :data:`SPREAD` of the offer, the offer leaves
    more than :data:`PROFIT` of the mover's limit, and it is no worse than every price of the
    previous period (when one is known)."""
    if turn.own_best == 0:
        return False
    if turn.side == SELLER:  # the ask is its side's, the bid the offer
        return (turn.own_best - turn.offer < SPREAD * turn.offer
                and turn.offer - turn.lo > PROFIT * turn.lo and turn.offer >= turn.prior_low)
    return (turn.offer - turn.own_best < SPREAD * turn.offer
            and turn.hi - turn.offer > PROFIT * turn.hi
            and (turn.prior_high == 0 or turn.offer <= turn.prior_high))


@njit(cache=True, inline="always")
def time_running_out(turn: Turn) -> bool:
    """No trade for :data:`QUIET` of the steps left after this one; or a wait (this step
    included) of :data:`WAITED` of them and a lull of :data:`LULL` steps; or the final
    decision."""
    step = (turn.move - 1) // 2
    left = turn.rounds - step - 1
    return (final(turn) or turn.quiet >= QUIET * left
            or (step + 1 >= WAITED * left and turn.quiet >= LULL))


@njit(cache=True, inline="always")
def jumps_in(turn: Turn) -> bool:
    """An opposite quote stands and one of the three triggers holds."""
    return turn.offer > 0 and (better_than_last_period(turn) or narrow_spread(turn)
                               or time_running_out(turn))


class Kaplan(RuleBased):
    """Waits at its extreme; jumps in when the offer beats last period's prices, when the
    spread is narrow and the deal profitable, or when time is running out."""

    name = "kaplan"
    classifier = Classifier(memory="none (the book shows the previous period's prices)")

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """Its extreme while it waits; jumping in, the offer if acceptable, else its limit."""
        extreme, limit = extreme_and_reservation(turn)
        if not jumps_in(turn):
            return extreme
        return turn.offer if acceptable(turn) else limit

    @staticmethod
    def accepts(turn: Turn, target: int) -> bool:
        """Inside its range, when it jumps in."""
        return acceptable(turn) and jumps_in(turn)
