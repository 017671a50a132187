"""The two-agent game's negotiation loop, compiled: a batch of negotiations to their end.

:func:`negotiate_rows` is the protocol's lockstep loop
(:func:`market.game.protocol.negotiate`) in machine code: the same moves,
each strategy group deciding for its rows in the same order (Sellers'
groups first, each group's rows ascending), so the same draws from the
same generator. :func:`depth_first` is its shortcut for strategies that
draw nothing: each negotiation to its end before the next, its state in
registers, the same moves since no draw order is at stake.

A template: the strategies' decisions (:mod:`market.game.dispatch`) are bound
when :mod:`strategies.compiled` generates the module that compiles these
loops with them, so the loops are written once, here, whatever the
strategies. The market's step and the environments compose them.
"""

from __future__ import annotations

from market.compiled.jit import borrowed, njit
from market.game.buffers import no_book, record_arrays, table_arrays
from market.game.dispatch import (  # bound when generated
    decide,
    decide_one,
    decide_rule,
    deterministic,
    member_params,
    rule_kind,
)
from market.game.moves import (
    GOES_ON,
    at_risk,
    bilateral_view,
    legal_block,
    mover,
    offered,
    outcome,
    play_move,
)
from market.game.rules import BUYER, SELLER, Turn


@njit(cache=True, inline="always")
def negotiate_rows(game, first, sellers, buyers, time_left, loyal, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
                   rng, pressure):
    """Negotiations of ``sellers`` against ``buyers`` to their end.

    ``game``: ``(P, T)``; ``first``: the side moving first, per negotiation;
    ``sellers``/``buyers``: ``(group, member, lo, hi)`` per negotiation;
    ``time_left`` and ``loyal``: what both movers see of the market, per negotiation
    (:mod:`market.game.dispatch`'s seat);
    ``kinds``: the kind of every population of the store ``st`` (the
    Sellers' ``0 .. n_groups_s - 1``, then the Buyers'). Returns the record's
    arrays (actions, level, n_moves) and, if a strategy played an illegal
    action, its move and population (-1, -1 if none). ``pressure``: the game's
    :class:`~market.game.pressure.Pressure`; with a breakdown risk, each move from
    move 1 on is followed by one uniform per negotiation that counter-offered, in
    ascending order (:func:`market.game.moves.play_move`, which
    :meth:`market.game.protocol.Lockstep.play` runs too).

    Inlined where a compiled caller calls it (the market's step), so a new
    engine compiles it once, inside the step; called from Python (the
    tournament, the report) it compiles on its own.
    """
    P, T = game
    n = first.size
    M = 2 * T
    actions, level, n_moves = record_arrays(n, M)
    all_deterministic = not at_risk(1, pressure)  # a breakdown draws: move by move, in order
    for k in kinds:
        all_deterministic = all_deterministic and deterministic(k)
    if all_deterministic:  # nothing draws: each negotiation to its end
        bad, bad_g = depth_first(game, first, sellers, buyers, kinds, n_groups_s, st, rng,
                                 actions, level, n_moves)
        return actions, level, n_moves, bad, bad_g
    bad, bad_g = breadth_first(game, first, sellers, buyers, (time_left, loyal), kinds,
                               n_groups_s, st, rng, pressure, (actions, level, n_moves),
                               table_arrays(n, kinds.size))
    return actions, level, n_moves, bad, bad_g


@njit(cache=True)
def breadth_first(game, first, sellers, buyers, sees, kinds, n_groups_s, st, rng,  # noqa: ANN001, ANN201
                  pressure, record, table):
    """:func:`negotiate_rows` for strategies that draw: move by move, every running
    negotiation's mover deciding in its population's group, in the protocol's order
    (Sellers' groups first, each group's rows ascending). ``record``: the arrays it fills;
    ``table``: its state (:func:`~market.game.buffers.table_arrays`). Returns the move and
    population of an illegal action, -1, -1 if none.

    Every array is lent for the call (:func:`~market.compiled.jit.borrowed`): the loop
    slices, hands on and inlines them at every move, which counted two atomic references
    each time."""
    P, T = game
    first, sellers, buyers, sees, kinds, st, record, table = borrowed(
        (first, sellers, buyers, sees, kinds, st, record, table))
    time_left, loyal = sees
    book = no_book()
    actions, level, n_moves = record
    last, prev, chosen, running, count, key, order = table
    n = first.size
    M = 2 * T
    s_group, s_member, s_lo, s_hi = sellers
    b_group, b_member, b_lo, b_hi = buyers
    n_groups = kinds.size
    n_running = n
    for move in range(M):
        if n_running == 0:
            break
        lo_a, hi_a = legal_block(move, P, T)
        count[:] = 0
        for j in range(n_running):
            i = running[j]
            if mover(move, first[i]) == SELLER:
                key[j] = s_group[i]
            else:
                key[j] = n_groups_s + b_group[i]
            count[key[j] + 1] += 1
        for g in range(n_groups):
            count[g + 1] += count[g]
        for j in range(n_running):  # stable: each group's rows stay ascending
            order[count[key[j]]] = running[j]
            count[key[j]] += 1
        start = 0
        for g in range(n_groups):
            stop = count[g]
            if stop == start:
                continue
            rg = order[start:stop]
            start = stop
            s = SELLER if g < n_groups_s else BUYER
            seat = (s_lo, s_hi, s_member, time_left, loyal, book) if s == SELLER else (
                b_lo, b_hi, b_member, time_left, loyal, book)
            decide(kinds[g], s, move, game, rg, (last, prev, first), seat, st, g, rng, chosen)
            for r in rg:
                if chosen[r] < lo_a or chosen[r] >= hi_a:
                    return move, g
        n_running = play_move(move, P, pressure, running, n_running, chosen,
                              (first, last, prev), (actions, level, n_moves), rng)
    return -1, -1


@njit(cache=True)
def depth_first(game, first, sellers, buyers, kinds, n_groups_s, st, rng, actions, level,  # noqa: ANN001, ANN201
                n_moves):
    """:func:`negotiate_rows` for strategies that draw nothing: the same moves, one
    negotiation at a time, each move one ``decide_rule`` (:data:`~market.game.dispatch.SWITCH`) on
    scalars (a table's ``decide_one`` reads its store). Returns
    the move and population of an illegal action, -1, -1 if none.

    The members' parameters are read before the loop, and the store is handed only to a
    table's call; the arrays are lent (:func:`~market.compiled.jit.borrowed`): every array
    an inlined call receives otherwise costs two atomic reference counts per move, which
    made this loop 3-4x the same rules played in registers."""
    P, T = game
    first, sellers, buyers, kinds, st, actions, level, n_moves = borrowed(
        (first, sellers, buyers, kinds, st, actions, level, n_moves))
    s_group, s_member, s_lo, s_hi = sellers
    b_group, b_member, b_lo, b_hi = buyers
    s_param = member_params(s_group, s_member, 0, st)
    b_param = member_params(b_group, b_member, n_groups_s, st)
    M = 2 * T
    for i in range(first.size):
        last_s = last_b = prev_s = prev_b = 0
        for move in range(M):
            lo_a, hi_a = legal_block(move, P, T)
            s = mover(move, first[i])
            if s == SELLER:
                g, m, lo, hi, param = s_group[i], s_member[i], s_lo[i], s_hi[i], s_param[i]
                offer, own, prv = last_b, last_s, prev_b
            else:
                g, m, lo, hi = n_groups_s + b_group[i], b_member[i], b_lo[i], b_hi[i]
                param = b_param[i]
                offer, own, prv = last_s, last_b, prev_s
            own_best, low, high, quiet = bilateral_view(own, move)
            turn = Turn(s, move, P, T, offer, own, prv, lo, hi, param, own_best, low, high,
                        quiet)
            k = kinds[g]
            if rule_kind(k):
                a = decide_rule(k, turn)
            else:
                a = decide_one(k, turn, first[i] == s, m, st, g, rng)
            if a < lo_a or a >= hi_a:
                return move, g
            actions[i, move] = a
            n_moves[i] = move + 1
            end = outcome(a, P, offer)
            if end == GOES_ON:
                if s == SELLER:
                    prev_s, last_s = last_s, offered(a)
                else:
                    prev_b, last_b = last_b, offered(a)
                continue
            level[i] = end
            break
    return -1, -1
