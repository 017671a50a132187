"""The Q-table layout of the document, and the tabular Q-learning primitives on it.

Rows (states): ``s``, the start, where the first mover must offer; then
``p.t`` for every round ``t`` in ``0..T-1`` and offer ``p`` in ``1..P`` (the
opponent's last offer and the round in which it was made), at row
``1 + t*P + (p-1)``; then the terminal ``d``. Columns (actions): offers
``1..P``, then accept, then reject, the protocol's action indices. Tables
in this layout can be exchanged with the original project and checked cell
by cell.

A role-aware table stacks two such tables, ``(2, S, A)``: index 0 holds the
rows used when the agent moved first, 1 when it moved second, which lets a
learner tell apart the two subgames that share an observation. Every module
that needs a row number, a row label or the legal actions of a row asks
this one, so the layout is written down once.

:func:`bellman_update` is the one definition of the update, and
:func:`greedy_ties`/:func:`nth_tie` of the greedy choice, compiled for the
learners and the training kernel alike.
"""

from __future__ import annotations

import numpy as np

from market.compiled import jit
from market.game import moves
from market.game.rules import Protocol


# --- the layout ---------------------------------------------------------------------------
def n_rows(protocol: Protocol) -> int:
    """Rows of a document-layout table: ``s``, ``p.t`` for all p and t, then ``d``."""
    return 2 + protocol.prices * protocol.rounds


def terminal_row(protocol: Protocol) -> int:
    """Index of the terminal row ``d``."""
    return n_rows(protocol) - 1


def row(protocol: Protocol, offer: np.ndarray | int, t: np.ndarray | int) -> np.ndarray:
    """Row of observation ``(offer, t)``: ``1 + t*P + (offer-1)``; ``offer == 0`` is ``s``."""
    offer = np.asarray(offer)
    return np.where(offer > 0, 1 + np.asarray(t) * protocol.prices + (offer - 1), 0)


def move_row(prices: int, move: np.ndarray | int, offered: np.ndarray | int) -> np.ndarray:
    """Row a mover sees at ``move`` when the move before offered action index ``offered``.

    The offer of action ``a`` is level ``a + 1``, made in round
    ``(move - 1) // 2``; move 0 sees the start row. For replaying a record
    (actions by move) without converting actions to levels first.
    """
    move = np.asarray(move)
    return np.where(move == 0, 0, 1 + ((move - 1) // 2) * prices + np.asarray(offered))


def round_rows(protocol: Protocol, t: int) -> slice:
    """The rows ``1.t .. P.t`` of round ``t``."""
    P = protocol.prices
    return slice(1 + t * P, 1 + (t + 1) * P)


def row_labels(protocol: Protocol) -> list[str]:
    """``s``, ``1.0`` .. ``P.(T-1)``, ``d``: the document's state names."""
    offers = [f"{p}.{t}" for t in range(protocol.rounds) for p in range(1, protocol.prices + 1)]
    return ["s", *offers, "d"]


@jit.njit(cache=True, inline="always")
def row_legal(prices: int, rounds: int, row: int) -> tuple[int, int]:
    """The actions legal in ``row``, one block ``[lo, hi)``: the game's rule
    (:func:`market.game.moves.legal_block`) at the row's move. Row ``s`` is move 0; the rows
    of round ``t`` share the legality of move ``2t + 1``; ``d`` (and beyond) has none."""
    if row == 0:
        return moves.legal_block(0, prices, rounds)
    if row > prices * rounds:
        return 0, 0
    # every round but the last shares one legality: the row's round by comparison, not by a
    # division (the training kernel asks twice a move)
    last = row > (rounds - 1) * prices
    return moves.legal_block(2 * rounds - 1 if last else 1, prices, rounds)


def legal_rows(protocol: Protocol) -> np.ndarray:
    """(S, A) mask of the actions legal in each row (:func:`row_legal`, asked once per round:
    a round's rows share it)."""
    P, T = protocol.prices, protocol.rounds
    mask = np.zeros((n_rows(protocol), protocol.n_actions), dtype=bool)
    for first_row in (0, *range(1, P * T + 1, P)):
        lo, hi = row_legal(P, T, first_row)
        mask[first_row:first_row + (1 if first_row == 0 else P), lo:hi] = True
    return mask


def untrained(tables: np.ndarray, protocol: Protocol, init: float = 0.0) -> np.ndarray:
    """Cells that carry nothing learned: illegal in their row, or still at the initial value.

    ``tables`` is one ``(S, A)`` table or any stack of them; the mask has its
    shape. Views leave these cells blank, as the document printed its tables.
    """
    tables = np.asarray(tables)
    return ~legal_rows(protocol) | (tables == init)


# --- learning and choosing: compiled, the one definition every learner runs -----------------
# The market's and the two-agent game's learners (strategies/qlearning.py) and the training
# kernel (market/game/episodes.py) all choose and learn with these. Each draws its uniforms from
# its own generator (numpy's, or the kernel's per-seed xoshiro), in its own documented order, so
# the draws are the caller's and the arithmetic is shared.
def bellman_update(
    q_sa: np.ndarray, reward: np.ndarray, next_value: np.ndarray, lr: np.ndarray | float,
    gamma: np.ndarray | float,
) -> np.ndarray:
    """``Q(s,a) <- (1 - lr) Q(s,a) + lr (r + gamma max_a' Q(s',a'))``, the document's update."""
    return (1.0 - lr) * q_sa + lr * (reward + gamma * next_value)


#: :func:`bellman_update` for one cell, compiled: what every learner runs
bellman_update1 = jit.njit(cache=True, inline="always")(bellman_update)


@jit.njit(cache=True, inline="always")
def row_max(q: np.ndarray, base: int, lo: int, hi: int) -> float:
    """``max_a q[base + a]`` over the legal block ``lo .. hi-1`` (-inf if empty): the value of
    the row a learner sees next, in the Bellman target."""
    v = -np.inf
    for a in range(lo, hi):
        v = max(v, q[base + a])
    return v


@jit.njit(cache=True, inline="always")
def pick(u: float, count: int) -> int:
    """Which of ``count`` items a uniform ``u`` in ``[0, 1)`` picks: ``floor(u * count)``."""
    return min(int(u * count), max(count - 1, 0))


@jit.njit(cache=True, inline="always")
def greedy_ties(q: np.ndarray, base: int, c0: int, c1: int, accept: bool, reject: bool,
                P: int) -> tuple[float, int, int]:
    """``(best, count, first)`` over the candidates of the row at ``q[base:]``: offers
    ``c0 .. c1-1``, accept (action ``P``) if ``accept``, reject (``P + 1``) if ``reject``.

    ``best`` is their greatest value (-inf if there is no candidate), ``count``
    how many equal it and ``first`` the lowest of those actions. With one,
    the greedy action is ``first``; with more, the caller draws one uniform
    ``u`` and plays :func:`nth_tie` of ``pick(u, count)``.
    """
    best = -np.inf
    for a in range(c0, c1):  # the maximum, then the ties: branch-free passes
        best = max(best, q[base + a])
    if accept:
        best = max(best, q[base + P])
    if reject:
        best = max(best, q[base + P + 1])
    count = 0
    first = -1
    if reject and q[base + P + 1] == best:
        count += 1
        first = P + 1
    if accept and q[base + P] == best:
        count += 1
        first = P
    for a in range(c1 - 1, c0 - 1, -1):  # downwards: ``first`` ends at the lowest maximum
        if q[base + a] == best:
            first = a
            count += 1
    return best, count, first


@jit.njit(cache=True, inline="always")
def nth_tie(q: np.ndarray, base: int, c0: int, c1: int, accept: bool, P: int, best: float,
            first: int, k: int) -> int:
    """The ``k``-th (from 0, in increasing action order) candidate worth ``best``, counting
    from ``first`` (:func:`greedy_ties`); reject if the others run out."""
    for a in range(max(first, c0), c1):
        if q[base + a] == best:
            if k == 0:
                return a
            k -= 1
    if k == 0 and accept and first <= P and q[base + P] == best:
        return P
    return P + 1
