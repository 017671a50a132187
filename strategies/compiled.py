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
from strategies.base import PARAMS, Strategy, param_at
from strategies.rule_based import accepts1
from strategies.rule_based import decide1 as decide1_rule

#: kind numbers of the rule-based strategies (target and accept rule)
AVERAGING, TIME_DEPENDENT, HARDLINER, TIT_FOR_TAT, ZI_C, ZI_U = range(6)
#: kind numbers of the table players
SPE, QLEARNING = 6, 7
#: kinds whose decisions draw nothing: a market of only these may play each negotiation to
#: its end before the next (the engine's depth-first loop), since no draw order can change
DETERMINISTIC = (AVERAGING, TIME_DEPENDENT, HARDLINER, TIT_FOR_TAT, SPE)
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
def _target(kind, side, move, P, T, offer, own, prev, lo, hi, param):  # noqa: ANN001, ANN202
    """The target of a deterministic rule (no generator passed: each pass would cost a
    reference count per row)."""
    if kind == AVERAGING:
        return averaging.target1(side, move, P, T, offer, own, prev, lo, hi, param, None)
    if kind == TIME_DEPENDENT:
        return time_dependent.target1(side, move, P, T, offer, own, prev, lo, hi, param, None)
    if kind == HARDLINER:
        return hardliner.target1(side, move, P, T, offer, own, prev, lo, hi, param, None)
    return tit_for_tat.target1(side, move, P, T, offer, own, prev, lo, hi, param, None)


@njit(cache=True, inline="always")
def rule1(kind, side, move, P, T, offer, own, prev, lo, hi, param):  # noqa: ANN001, ANN201
    """The action of one row of a deterministic rule (every kind of :data:`DETERMINISTIC`
    but ``SPE``), from scalars only: what :func:`decide` does for that kind, row by row."""
    target = _target(kind, side, move, P, T, offer, own, prev, lo, hi, param)
    return decide1_rule(move, P, T, target, accepts1(side, move, T, offer, lo, hi, target))


@njit(cache=True, inline="always")
def decide(kind, side, move, P, T, rows, last, prev, first, lo, hi, member,  # noqa: ANN001, ANN201, PLR0913
           time_left, fstore, istore, layout, g, config, rng, out):
    """Actions of population ``g``'s rows ``rows`` at ``move`` into ``out`` (by negotiation).

    ``last``/``prev``: each side's last offer and the one before, per
    negotiation; ``first``: the side that moved first; ``lo``/``hi``/``member``/
    ``time_left``: the mover's, per negotiation (-1: no clock); the
    population's arrays are in the engine's stores at ``layout[g]``
    (:class:`~strategies.base.KernelState`, ``config[g]`` its switches).
    """
    if kind == SPE:
        spe.decide_rows(side, move, P, rows, last, first, istore, layout, g, out)
        return
    if kind == QLEARNING:
        qlearning.decide_rows(side, move, P, T, rows, last, first, lo, hi, member, time_left,
                              fstore, istore, layout, g, config, rng, out)
        return
    if kind in (ZI_C, ZI_U):  # a quote drawn per row, rows in order
        for r in rows:
            offer = last[1 - side, r]
            if kind == ZI_C:
                target = zi.target1_constrained(side, move, P, T, offer, 0, 0, lo[r], hi[r], 0.0,
                                                rng)
                accept = accepts1(side, move, T, offer, lo[r], hi[r], target)
            else:
                target = zi.target1_unconstrained(side, move, P, T, offer, 0, 0, lo[r], hi[r],
                                                  0.0, rng)
                accept = zi.accepts1_unconstrained(side, offer, target)
            out[r] = decide1_rule(move, P, T, target, accept)
        return
    with_param = layout[g, PARAMS + 2] > 0
    for r in rows:
        param = fstore[param_at(layout, g, member[r], 0)] if with_param else 0.0
        out[r] = rule1(kind, side, move, P, T, last[1 - side, r], last[side, r],
                       prev[1 - side, r], lo[r], hi[r], param)


@njit(cache=True, inline="always")
def learn(kind, side, P, T, rows, actions, first, n_moves, level, member, reward,  # noqa: ANN001, ANN201, PLR0913
          time_left, fstore, istore, layout, g, config):
    """Learning from finished negotiations ``rows`` (only the Q-learner learns)."""
    if kind == QLEARNING:
        qlearning.learn_rows(side, P, T, rows, actions, first, n_moves, level, member, reward,
                             time_left, fstore, istore, layout, g, config)
