"""The calls a compiled negotiation makes to its strategies, as stand-ins: their contract.

The compiled loops (:mod:`market.game.loops`, the market's step, the
environments' step) call a strategy population through these
functions, by *kind* number. The loops are never compiled as they stand:
:mod:`strategies.compiled` generates the real functions from the registered
strategies (a switch over each strategy's own compiled module) and compiles
them with the loops. These stand-ins know no strategy: every kind plays an
illegal action, which the loops refuse.

Arguments, grouped so that a new per-trader array is one edit:
``game`` ``(P, T)``; ``table`` ``(last, prev, first)``: each side's last
offer and the one before, per negotiation ``(2, n)``, and the side that moved
first; ``seat`` ``(lo, hi, member, time_left)``: the mover's acceptable
levels, its member index in its population and the steps left in the
trading period (-1: no clock), per negotiation; ``st`` ``(fstore, istore,
layout, config)``: every population's arrays (:class:`strategies.compiled.Store`);
``g`` the population; ``record`` ``(actions, first, n_moves, level)``:
finished negotiations; ``turn``: one row's :class:`~market.game.rules.Turn`.

A strategy's generated entry points lend these arrays to its rule for the
call (:func:`market.compiled.jit.borrowed`): a rule reads and writes them in
place, and keeps none of them after it returns.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit


@njit(cache=True)
def decide(kind, side, move, game, rows, table, seat, st, g, rng, out):  # noqa: ANN001, ANN201
    """Actions of population ``g`` for the negotiations ``rows`` at ``move``, into ``out``."""
    for r in rows:
        out[r] = -1


@njit(cache=True)
def decide_one(kind, turn, is_first, member, st, g, rng):  # noqa: ANN001, ANN201
    """The action of one negotiation row, for table kinds that draw nothing."""
    return -1


@njit(cache=True)
def decide_rule(kind, turn):  # noqa: ANN001, ANN201
    """The action of one negotiation row, for rule kinds that draw nothing: ``turn`` (its
    ``param`` the member's, :func:`member_params`) is all a rule reads, so only scalars
    cross the call."""
    return -1


@njit(cache=True)
def rule_kind(kind):  # noqa: ANN001, ANN201
    """Whether a kind that draws nothing decides by :func:`decide_rule` (else by
    :func:`decide_one`)."""
    return False


@njit(cache=True)
def member_params(groups, members, g0, st):  # noqa: ANN001, ANN201
    """Each row's member parameter (``turn.param``): population ``g0 + groups[i]``, member
    ``members[i]`` of the store ``st``."""
    return np.zeros(groups.size)


@njit(cache=True)
def learn(kind, side, game, rows, record, member, reward, time_left, st, g):  # noqa: ANN001, ANN201
    """Learning of population ``g`` from the finished negotiations ``rows`` of ``record``
    (``member``, ``reward``, ``time_left``: one per row)."""


@njit(cache=True)
def deterministic(kind):  # noqa: ANN001, ANN201
    """Whether a kind draws nothing (a market of such kinds plays depth first)."""
    return False


@njit(cache=True)
def respond(kind, side, event, member, limit, active, st, g, rng):  # noqa: ANN001, ANN201
    """Member ``member`` of population ``g`` hears a book's public ``event`` ``(level, deal,
    shout side)`` (:mod:`market.sim.auction`); ``limit`` its limit level, ``active`` whether
    it still holds its unit."""


@njit(cache=True)
def responds(kind):  # noqa: ANN001, ANN201
    """Whether a kind hears a book's public events (none of the stand-ins do)."""
    return False


@njit(cache=True)
def tabled(kind):  # noqa: ANN001, ANN201
    """Whether a kind decides by a table over the game's moves and rounds."""
    return False
