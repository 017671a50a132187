"""The calls a compiled negotiation makes to its strategies: their contract, as one text.

The compiled loops (:mod:`market.game.loops`, the market's step, the
environments' step) call a strategy population through the functions of
:data:`SWITCH`, by *kind* number: ``decide`` (a population's actions for some
rows), ``decide_one`` and ``decide_rule`` (one row of a deterministic table or
rule kind), ``learn``, ``respond`` (a book's public event), and what a kind is
(``rule_kind``, ``deterministic``, ``responds``, ``tabled``), each with its
docstring in the text. :mod:`strategies.compiled` fills the text with a case
per kind (a call into that strategy's own compiled module) and compiles it
with the loops; filled with no kind, it gives the stand-ins the loops import
here, which know no strategy: every kind plays an illegal action, which the
loops refuse.

Arguments, grouped so that a new per-trader array is one edit:
``game`` ``(P, T)``; ``table`` ``(last, prev, first)``: each side's last
offer and the one before, per negotiation ``(2, n)``, and the side that moved
first; ``seat`` ``(lo, hi, member, time_left, loyal, book)``: the mover's
acceptable levels, its member index in its population, the steps left in the
trading period (-1: no clock) and whether the pair is a loyal one (1: the
Buyer is loyal to this Seller, :func:`market.sim.partners.loyal_rows`; 0
otherwise, and always outside partner choice), per negotiation, and what an
order book shows the mover, one for the call
(:data:`market.game.buffers.BOOK_VIEW`; all -1 in bilateral bargaining,
:func:`market.game.buffers.no_book`); ``st`` ``(fstore, istore,
layout, config)``: every population's arrays (:class:`strategies.stores.Store`);
``g`` the population; ``record`` ``(actions, first, n_moves, level)``:
finished negotiations; ``turn``: one row's :class:`~market.game.rules.Turn`.

A strategy's generated entry points lend these arrays to its rule for the
call (:func:`market.compiled.jit.borrowed`): a rule reads and writes them in
place, and keeps none of them after it returns.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit

#: the switch by kind, as text; its fields are filled by :mod:`strategies.compiled` (each
#: kind's case, the objects it is given as ``_BOUND``, the import of ``member_params``, and
#: ``entry``: how ``decide``, ``decide_rule``, ``learn`` and ``respond`` are compiled, inlined
#: into the engine's loops or each its own cached function in a strategy's module)
SWITCH = '''

# --- the switch, generated: each kind's case calls its strategy's compiled code ---------------
from market.compiled.jit import borrowed as _borrowed  # noqa: E402
from market.compiled.jit import njit as _njit  # noqa: E402
{member_params}

{bindings}
{rules}

@_njit({entry})
def decide(kind, side, move, game, rows, table, seat, st, g, rng, out):
    """Actions of population ``g`` (of kind ``kind``) for ``rows`` into ``out``."""
    rows, table, seat, st, out = _borrowed((rows, table, seat, st, out))  # jit.borrowed
{decide_cases}
    for r in rows:  # an unknown kind plays an illegal action, which every caller refuses
        out[r] = -1


@_njit(cache=True, inline="always")
def decide_one(kind, turn, is_first, member, st, g, rng):
    """The action of one row of a deterministic table kind (the depth-first loop's)."""
{one_cases}
    return -1


@_njit({entry})
def decide_rule(kind, turn):
    """The action of one row of a deterministic rule kind (the depth-first loop's), ``turn``
    with its member's parameter: scalars only, so the loop counts no references per move."""
{rule_cases}
    return -1


@_njit(cache=True, inline="always")
def rule_kind(kind):
    """Whether a deterministic kind decides by ``decide_rule``."""
    return {rule_kinds}


@_njit({entry})
def learn(kind, side, game, rows, record, member, reward, time_left, loyal, st, g):
    """Learning of population ``g`` (of kind ``kind``) from finished negotiations ``rows``
    (``member``, ``reward``, ``time_left`` and ``loyal``: one each, as the seat had them).
    Its arguments are not lent (``jit.borrowed``): the engine makes them for the call (a
    population's rows, rewards and clock), and lent, they were freed while it read them."""
{learn_cases}
    return


@_njit(cache=True, inline="always")
def deterministic(kind):
    """Whether a kind draws nothing (and has a one-row form)."""
    return {deterministic}


@_njit({entry})
def respond(kind, side, event, member, limit, active, st, g, rng):
    """A member of population ``g`` (of kind ``kind``) hears a book's public ``event``."""
    st = _borrowed(st)
{respond_cases}
    return


@_njit(cache=True, inline="always")
def responds(kind):
    """Whether a kind hears a book's public events."""
    return {responds}


@_njit(cache=True, inline="always")
def tabled(kind):
    """Whether a kind decides by a table over the game's moves and rounds (its ``game`` is
    always the game's own ``(P, T)``)."""
    return {tabled}
'''

#: how the engine's loops compile the switch's entries: inlined where they are called
INLINED = 'cache=True, inline="always"'
#: ... and a strategy's own module: each its own cached function, which engines link
OWN = "cache=True"

exec(compile(SWITCH.format(  # the stand-ins: the switch with no kind
    entry=INLINED, member_params="", bindings="", rules="", decide_cases="", one_cases="",
    rule_cases="", rule_kinds="False", learn_cases="", deterministic="False", respond_cases="",
    responds="False", tabled="False"), "<market.game.dispatch: no kind>", "exec"))


@njit(cache=True)
def member_params(groups, members, g0, st):  # noqa: ANN001, ANN201
    """Each row's member parameter (``turn.param``): population ``g0 + groups[i]``, member
    ``members[i]`` of the store ``st``."""
    return np.zeros(groups.size)
