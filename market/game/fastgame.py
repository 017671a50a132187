"""Many negotiations against one opponent, advanced by an outside agent's actions, compiled.

The core of the fast environments (:mod:`market.interop.vector_env`, and the
single Gymnasium environment when its opponent has a compiled decision), in
the game layer: it plays the two-agent game and knows nothing of the market.
Each row is one negotiation: the agent plays ``side``, the opponent the
other side with a built-in strategy's compiled decision
(``decide`` of :data:`market.game.dispatch.SWITCH`, the same one the market engine runs,
so the opponent makes exactly the moves and draws of its ``act``). A
template, compiled with the strategies' decisions by :mod:`strategies.compiled`.
The rules are the game's compiled rules (:mod:`market.game.moves`): move
``m``'s mover, what is legal, what an action does, whether the talks end and what
a deal is worth; an action the rules forbid is played as reject, as in
:class:`~market.interop.episode.Episode`.

A step: every row that ended at the last step starts anew (``autoreset``:
Gymnasium's next-step rule, the step's action ignored), every other row
plays the agent's action, then every row where the opponent is to move
gets its move (rows grouped by move, in row order, so the draws are fixed by
the seed and the number of rows), and the outputs are written: the agent's
observation (:mod:`market.interop.episode`'s four numbers), its action mask,
the reward of the rows that ended, and which ended.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import generator, njit
from market.game.dispatch import decide  # bound when generated
from market.game.moves import (
    GOES_ON,
    OPEN_RANDOM,
    at_risk,
    breaks,
    legal_block,
    mover,
    offered,
    outcome,
    worth,
)
from market.game.rules import SELLER


@njit(cache=True, inline="always")
def _play(i, s, a, P, move, last, prev, level, done, ended, pressure, rng):  # noqa: ANN001, ANN202
    """Side ``s`` plays action ``a`` in row ``i``: the game's rules for one row, a
    counter-offer drawing at once whether the talks break down, when they may."""
    m = move[i]
    move[i] += 1
    end = outcome(a, P, last[1 - s, i])
    if end == GOES_ON:
        prev[s, i] = last[s, i]
        last[s, i] = offered(a)
        if at_risk(m, pressure) and breaks(rng.random(), m, pressure):
            done[i] = True
            ended[i] = True
        return
    level[i] = end
    done[i] = True
    ended[i] = True


@njit(cache=True)
def step(env, actions, autoreset, rows_state, seat, kind, st, draws, outs):  # noqa: ANN001, ANN201
    """One step of every row (see the module docstring); ``actions[i] < 0``: no action
    (a reset row, or the start of all rows). ``env``: ``(side, P, T, open_mode,
    reward_mode, floor, ceiling, pressure)`` (``pressure``: the game's time pressure,
    :class:`~market.game.pressure.Pressure`); ``rows_state``: ``(first, move, last, prev, level,
    done)``, changed in place; ``seat``: the opponent's ``(lo, hi, member, time_left, loyal,
    book)`` (its book :func:`~market.game.buffers.no_book`); writes ``outs``: ``(obs, mask,
    reward, ended, illegal)``. Returns the move of an illegal action of the opponent, -1 if
    none. ``draws``: the generator, or its :func:`~market.compiled.jit.rng_handle` (cheaper to
    pass on every step)."""
    rng = generator(draws)
    side, P, T, open_mode, reward_mode, floor, ceiling, pressure = env
    reward, ended, illegal = outs[2], outs[3], outs[4]
    _agent_moves(actions, autoreset, side, P, T, open_mode, pressure, rows_state, reward,
                 ended, illegal, rng)
    broken = _opponent_moves(kind, 1 - side, P, T, pressure, rows_state, ended, seat, st, rng)
    if broken >= 0:
        return broken
    _outputs(side, P, T, reward_mode, floor, ceiling, pressure, rows_state, outs)
    return -1


@njit(cache=True, inline="always")
def _agent_moves(actions, autoreset, side, P, T, open_mode, pressure, rows_state, reward,  # noqa: ANN001, ANN202
                 ended, illegal, rng):
    """Every row's reset or the agent's action (a forbidden one played as reject)."""
    first, move, last, prev, level, done = rows_state
    for i in range(first.size):
        reward[i] = 0.0
        ended[i] = False
        illegal[i] = False
        if done[i] or actions[i] < 0:
            if done[i] and not autoreset:
                continue
            first[i] = rng.integers(0, 2) if open_mode == OPEN_RANDOM else open_mode
            move[i] = 0
            last[0, i] = last[1, i] = prev[0, i] = prev[1, i] = 0
            level[i] = 0
            done[i] = False
            continue
        a = actions[i]
        lo_a, hi_a = legal_block(move[i], P, T)
        if a < lo_a or a >= hi_a:
            illegal[i] = True
            a = P + 1
        _play(i, side, a, P, move, last, prev, level, done, ended, pressure, rng)


@njit(cache=True, inline="always")
def _opponent_moves(kind, opp, P, T, pressure, rows_state, ended, seat, st, rng):  # noqa: ANN001, ANN202
    """The opponent's turns, grouped by move (each group one compiled decision); the move
    of an action it may not play (not a built-in strategy's doing), else -1."""
    first, move, last, prev, level, done = rows_state
    n = first.size
    rows = np.empty(n, dtype=np.int64)
    chosen = np.zeros(n, dtype=np.int64)
    for m in range(2 * T):
        k = 0
        for i in range(n):
            if not done[i] and move[i] == m and mover(m, first[i]) == opp:
                rows[k] = i
                k += 1
        if k == 0:
            continue
        rg = rows[:k]
        decide(kind, opp, m, (P, T), rg, (last, prev, first), seat, st, 0, rng, chosen)
        lo_a, hi_a = legal_block(m, P, T)
        for r in rg:
            if chosen[r] < lo_a or chosen[r] >= hi_a:
                return m
            _play(r, opp, chosen[r], P, move, last, prev, level, done, ended, pressure, rng)
    return -1


@njit(cache=True, inline="always")
def _outputs(side, P, T, reward_mode, floor, ceiling, pressure, rows_state, outs):  # noqa: ANN001, ANN202
    """The agent's observation and action mask in every row, and the reward of the rows
    that ended with a deal."""
    first, move, last, prev, level, done = rows_state
    obs, mask, reward, ended, illegal = outs
    opp = 1 - side
    for i in range(first.size):
        t = min(max((move[i] - 1) // 2 if move[i] > 0 else -1, -1), T - 1)
        obs[i, 0], obs[i, 1], obs[i, 2] = last[opp, i], t + 1, last[side, i]
        obs[i, 3] = 1 if first[i] == side else 0
        to_move = mover(move[i], first[i])
        lo_a, hi_a = legal_block(move[i], P, T)
        for a in range(P + 2):
            mask[i, a] = 1 if (not done[i] and to_move == side and lo_a <= a < hi_a) else 0
        if ended[i] and level[i] > 0:
            p = level[i]
            if reward_mode == 0:  # the two-agent rewards
                gain = p / P if side == SELLER else 1.0 - p / P
            else:  # surplus over the reservation level, over the grid's width
                gain = ((p - floor) if side == SELLER else (ceiling - p)) / (P - 1)
            # the accepted offer was made at move move[i] - 2
            reward[i] = worth(gain, side, move[i] - 2, pressure, 1.0)
