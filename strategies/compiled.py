"""Which strategies have a compiled decision, and the one switch that calls them.

The compiled market engine (:mod:`market.sim.engine`) runs a whole market
step in machine code, so it cannot call a strategy's Python :meth:`act`. A
built-in strategy therefore writes its rule twice in its own module: ``act``
(or ``target``), the readable specification that every other path runs, and
a compiled form beside it (``target1`` for a rule-based strategy,
``decide_rows``/``learn_rows`` for a table player). This module lists those
compiled forms by strategy name, gives each a *kind* number, and switches
on it: numba cannot call functions held in a list at the speed a move
needs (a tuple of first-class functions costs about 170 us to pass in),
while a switch compiles into the engine once and is cached.

A strategy runs compiled only if its class sets ``compiled = True`` in its
own body (:func:`kind_of`), so a user's subclass that changes the rule
falls back to the lockstep path instead of silently playing its parent's
compiled rule. The compiled forms make exactly the draws of ``act`` in the
same order, from the same numpy ``Generator`` (numba's generator shares
its bit generator), so both paths give the same tables bit for bit; the
tests check every built-in strategy that way.
"""

from __future__ import annotations

from market.game.jit import njit
from strategies import averaging, hardliner, qlearning, spe, time_dependent, tit_for_tat
from strategies import zero_intelligence as zi
from strategies.base import Strategy
from strategies.rule_based import accepts1, decide1

#: kind numbers of the rule-based strategies (target and accept rule)
AVERAGING, TIME_DEPENDENT, HARDLINER, TIT_FOR_TAT, ZI_C, ZI_U = range(6)
#: kind numbers of the table players
SPE, QLEARNING = 6, 7
#: strategy name -> kind
KINDS = {
    "averaging": AVERAGING, "boulware": TIME_DEPENDENT, "linear": TIME_DEPENDENT,
    "conceder": TIME_DEPENDENT, "hardliner": HARDLINER, "tit-for-tat": TIT_FOR_TAT,
    "zi-c": ZI_C, "zi-u": ZI_U, "spe": SPE, "qlearning": QLEARNING,
}


def kind_of(strategy: Strategy) -> int | None:
    """The kind of ``strategy``'s compiled decision; None if it has none (lockstep path)."""
    cls = type(strategy)
    if not cls.__dict__.get("compiled", False):
        return None
    return KINDS.get(cls.name)


@njit(cache=True, inline="always")
def _target(kind, side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN202
    if kind == AVERAGING:
        return averaging.target1(side, move, P, T, offer, own, prev, lo, hi, param, rng)
    if kind == TIME_DEPENDENT:
        return time_dependent.target1(side, move, P, T, offer, own, prev, lo, hi, param, rng)
    if kind == HARDLINER:
        return hardliner.target1(side, move, P, T, offer, own, prev, lo, hi, param, rng)
    if kind == TIT_FOR_TAT:
        return tit_for_tat.target1(side, move, P, T, offer, own, prev, lo, hi, param, rng)
    if kind == ZI_C:
        return zi.target1_constrained(side, move, P, T, offer, own, prev, lo, hi, param, rng)
    return zi.target1_unconstrained(side, move, P, T, offer, own, prev, lo, hi, param, rng)


@njit(cache=True)
def decide(kind, side, move, P, T, rows, offer, own, prev, first, lo, hi, member,  # noqa: ANN001, ANN201, PLR0913
           time_left, params, tables, table, played, config, rng, out):
    """Actions of one strategy's rows ``rows`` at ``move`` into ``out`` (by negotiation).

    ``offer``/``own``/``prev``: the opponent's last offer, the mover's own last
    offer and the opponent's offer before its last, per negotiation; ``first``:
    the side that moved first; ``lo``/``hi``/``member``/``time_left``: the
    mover's, per negotiation (-1: no clock); the rest is the strategy's
    :class:`~strategies.base.KernelState`.
    """
    if kind == SPE:
        spe.decide_rows(side, move, P, rows, offer, first, table, out)
        return
    if kind == QLEARNING:
        qlearning.decide_rows(side, move, P, T, rows, offer, first, lo, hi, member, time_left,
                              params, tables, played, config, rng, out)
        return
    with_param = params.shape[1] > 0
    for r in rows:
        param = params[member[r], 0] if with_param else 0.0
        target = _target(kind, side, move, P, T, offer[r], own[r], prev[r], lo[r], hi[r],
                         param, rng)
        if kind == ZI_U:
            accept = zi.accepts1_unconstrained(side, offer[r], target)
        else:
            accept = accepts1(side, move, T, offer[r], lo[r], hi[r], target)
        out[r] = decide1(move, P, T, target, accept)


@njit(cache=True)
def learn(kind, side, P, T, rows, actions, first, n_moves, level, member, reward,  # noqa: ANN001, ANN201, PLR0913
          time_left, params, tables, played, wait, config):
    """Learning from finished negotiations ``rows`` (only the Q-learner learns)."""
    if kind == QLEARNING:
        qlearning.learn_rows(side, P, T, rows, actions, first, n_moves, level, member, reward,
                             time_left, params, tables, played, wait, config)
