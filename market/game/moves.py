"""The rules of the game, compiled and stated once: every path that plays the game calls these.

| Rule                             | Function                                     |
|----------------------------------|----------------------------------------------|
| who opens                        | :data:`OPEN_RANDOM` (drawn) or a side        |
| who moves at move ``m``          | :func:`mover` ``(move, first)``              |
| which actions are legal          | :func:`legal_block` ``(move, P, T)``         |
| what an action does              | :func:`outcome`, :func:`offered`             |
| a breakdown after a counter-offer| :func:`at_risk`, :func:`breaks`              |
| the chance to go on after a move | :func:`survival` ``(move, pressure)``        |
| what a deal is worth to a side   | :func:`worth` ``(gain, side, k, pressure, s)``|
| a whole move of many rows        | :func:`play_move`                            |
| what a bargainer sees of a market| :func:`bilateral_view` ``(own, move)``       |

The game (:mod:`market.game.rules` states it in words): moves alternate, the
first mover at even moves; at move 0 it must offer; a mover at move
``m >= 1`` may offer, accept the offer on the table or reject; in the last
round (``(m - 1) // 2 == T - 1``) it may only accept or reject. Action
``a < P`` offers level ``a + 1``, ``P`` accepts, ``P + 1`` rejects.

Time pressure travels as one :class:`~market.game.pressure.Pressure` record
(each side's discount factor and cost per offer, the breakdown risk). A deal
on the ``k``-th offer (``k = 0, 1, ...``; accepted at move ``k + 1``, a
record of ``k + 2`` moves) is worth ``gain * d ** k - k * c`` to a side with
factor ``d`` and cost ``c`` per offer (:func:`worth`; ``d ** k`` is C's
``pow``, as Python computes it). After each counter-offer (an offer at move
``m >= 1``) the talks break down with probability ``Q``: the caller draws
one uniform from its own generator, in its own documented order, only when
:func:`at_risk` says so, and :func:`breaks` reads it; :func:`survival` is its
expectation, which the exact evaluator weighs continuations by.

The mechanism (:class:`market.game.protocol.Lockstep`), both compiled
negotiation loops (:mod:`market.game.loops`), the training kernel
(:mod:`market.game.episodes`), the Q-table's legal rows
(:mod:`market.game.qtable`), the market's settlement, the environments'
compiled step (:mod:`market.game.fastgame`) and the exact evaluator
(:mod:`market.game.evaluation`) all call these: a new rule of the game is
written here, once. Each is a small numba function over scalars, inlined
into its callers (``inline="always"``), so it costs nothing in a loop.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit

#: who opens: drawn per negotiation (the two sides are 0 and 1)
OPEN_RANDOM = -1
#: :func:`outcome` of an offer: the talks go on
GOES_ON = -1
#: the level of "no deal" (levels are 1..P)
NO_DEAL = 0


@njit(cache=True, inline="always")
def bilateral_view(own: int, move: int) -> tuple[int, int, int, int]:
    """What a mover in bilateral bargaining sees of the market around it, a
    :class:`~market.game.rules.Turn`'s last four fields: it is its own side (the side's best
    quote is its own last offer), no earlier period's trades are known, and no deal has been
    made since the negotiation opened (the rounds since then: its round)."""
    return own, 0, 0, (move - 1) // 2 if move > 0 else 0


@njit(cache=True, inline="always")
def mover(move: int, first: int) -> int:
    """The side to move at ``move`` (>= 0) when ``first`` (0 or 1) moved first: the first
    mover at even moves. A bit operation: the training kernel asks at every move."""
    return first ^ (move & 1)


@njit(cache=True, inline="always")
def legal_block(move: int, prices: int, rounds: int) -> tuple[int, int]:
    """The actions legal at ``move``, one block ``[lo, hi)``: offers only at move 0, accept or
    reject in the last round, everything else between."""
    if move == 0:
        return 0, prices
    if (move - 1) // 2 == rounds - 1:
        return prices, prices + 2
    return 0, prices + 2


@njit(cache=True, inline="always")
def outcome(action: int, prices: int, offer: int) -> int:
    """What ``action`` does with ``offer`` (the opponent's level) on the table: :data:`GOES_ON`
    for an offer (the talks go on, :func:`offered` is put down), the deal's level ``offer``
    for accept, :data:`NO_DEAL` for reject."""
    if action < prices:
        return GOES_ON
    if action == prices:
        return offer
    return NO_DEAL


@njit(cache=True, inline="always")
def offered(action: int) -> int:
    """The level an offer action puts on the table."""
    return action + 1


@njit(cache=True, inline="always")
def at_risk(move: int, pressure) -> bool:  # noqa: ANN001
    """Whether an offer at ``move`` is a counter-offer the talks may break down after (a
    breakdown risk, and move 1 or later: the opening offer always reaches the responder).
    The caller draws one uniform exactly when this holds."""
    return pressure.breakdown > 0.0 and move >= 1


@njit(cache=True, inline="always")
def breaks(u: float, move: int, pressure) -> bool:  # noqa: ANN001
    """Whether a uniform ``u`` drawn after a counter-offer at ``move`` ends the talks:
    ``u < Q`` (the risk is the same at every move; a rule whose risk changes with the move
    would say so here and in :func:`survival`)."""
    return u < pressure.breakdown


@njit(cache=True, inline="always")
def survival(move: int, pressure) -> float:  # noqa: ANN001
    """The chance that the talks go on after an offer at ``move``: ``1 - Q`` after a
    counter-offer, else 1 (the evaluator's expectation of :func:`breaks`)."""
    if at_risk(move, pressure):
        return 1.0 - pressure.breakdown
    return 1.0


@njit(cache=True, inline="always")
def worth(gain: float, side: int, offers: int, pressure, scale: float) -> float:  # noqa: ANN001
    """What a deal of undiscounted ``gain`` to ``side`` is worth when made on the ``offers``-th
    offer (counted from 0): ``gain * d ** offers - offers * c * scale``, with ``d`` the side's
    discount factor and ``c`` its cost per offer as a share of the surplus, ``scale`` what a
    surplus of 1 is in ``gain``'s unit (1 in the two-agent game, the price range in a
    market). A negotiation that fails is worth 0 whatever it cost: callers ask only for
    deals."""
    d = pressure.seller_discount if side == 0 else pressure.buyer_discount
    c = pressure.seller_cost if side == 0 else pressure.buyer_cost
    w = gain
    if d < 1.0:
        w *= d ** float(offers)  # C's pow, as Python computes d ** k
    if c > 0.0:
        w -= offers * (c * scale)
    return w


@njit(cache=True, inline="always")
def play_move(move, prices, pressure, running, n_running, chosen, table, record, rng):  # noqa: ANN001, ANN201
    """Play ``move`` in the negotiations ``running[:n_running]`` (ascending): ``chosen[i]`` is
    row ``i``'s action. Returns how many still run (compacted to the front of ``running``,
    in order).

    ``table``: ``(first, last, prev)``, the first mover per row and each side's last offer
    and the one before, ``(2, n)``; ``record``: ``(actions, level, n_moves)``; changed in
    place. With a breakdown risk, after the move every row that counter-offered draws one
    uniform from ``rng`` (numpy's ``Generator``), in ascending row order, and ends with no
    deal when :func:`breaks`.
    """
    first, last, prev = table
    actions, level, n_moves = record
    still = 0
    for j in range(n_running):
        i = running[j]
        a = chosen[i]
        actions[i, move] = a
        n_moves[i] = move + 1
        mv = mover(move, first[i])
        end = outcome(a, prices, last[1 - mv, i])
        if end == GOES_ON:
            prev[mv, i] = last[mv, i]
            last[mv, i] = offered(a)
            running[still] = i
            still += 1
        else:
            level[i] = end
    if at_risk(move, pressure):  # after each counter-offer, in ascending order
        kept = 0
        for j in range(still):
            i = running[j]
            if not breaks(rng.random(), move, pressure):
                running[kept] = i
                kept += 1
        still = kept
    return still


@njit(cache=True)
def deal_values(level: np.ndarray, move: np.ndarray, prices: int, pressure  # noqa: ANN001
                ) -> tuple[np.ndarray, np.ndarray]:
    """(Seller, Buyer) worth of deals at ``level`` (1..P) accepted at ``move`` (on the offer of
    move ``move - 1``) in the two-agent game: shares ``L / P`` and ``1 - L / P`` through
    :func:`worth`. For Python callers (the evaluator, records, an episode's end)."""
    n = level.size
    seller, buyer = np.empty(n), np.empty(n)
    for i in range(n):
        frac = level[i] / prices
        k = max(move[i] - 1, 0)
        seller[i] = worth(frac, 0, k, pressure, 1.0)
        buyer[i] = worth(1.0 - frac, 1, k, pressure, 1.0)
    return seller, buyer


__all__ = ["GOES_ON", "NO_DEAL", "OPEN_RANDOM", "at_risk", "breaks", "deal_values",
           "legal_block", "mover", "offered", "outcome", "play_move", "survival", "worth"]
