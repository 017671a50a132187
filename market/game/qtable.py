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

:func:`bellman_update` is the one definition of the update, compiled
(:data:`bellman_update1`) for the learners and the training kernel alike.
"""

from __future__ import annotations

import numpy as np

from market.game import jit
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


def legal_rows(protocol: Protocol) -> np.ndarray:
    """(S, A) mask of the actions legal in each row, from the protocol's own rule.

    Row ``s`` is move 0; the rows of round ``t`` share the legality of move
    ``2t + 1`` (offers are illegal in the last round); ``d`` has none.
    """
    mask = np.zeros((n_rows(protocol), protocol.n_actions), dtype=bool)
    mask[0] = protocol.legal(0)
    for t in range(protocol.rounds):
        mask[round_rows(protocol, t)] = protocol.legal(2 * t + 1)
    return mask


def untrained(tables: np.ndarray, protocol: Protocol, init: float = 0.0) -> np.ndarray:
    """Cells that carry nothing learned: illegal in their row, or still at the initial value.

    ``tables`` is one ``(S, A)`` table or any stack of them; the mask has its
    shape. Views leave these cells blank, as the document printed its tables.
    """
    tables = np.asarray(tables)
    return ~legal_rows(protocol) | (tables == init)


def table_shape(protocol: Protocol, roles: int = 1) -> tuple[int, ...]:
    """``(S, A)`` for the document's layout, ``(2, S, A)`` role-aware."""
    shape = (n_rows(protocol), protocol.n_actions)
    return shape if roles == 1 else (roles, *shape)


# --- learning -------------------------------------------------------------------------------
# How a tabular learner *chooses* is compiled code, written once in strategies/qlearning.py
# (``decide_rows``: greedy with uniform tie-breaking, then epsilon exploration) for the market
# and the two-agent game, and in market/game/kernel.py (``choose``) for training, whose draws
# come from its own per-seed generator.
def bellman_update(
    q_sa: np.ndarray, reward: np.ndarray, next_value: np.ndarray, lr: np.ndarray | float,
    gamma: np.ndarray | float,
) -> np.ndarray:
    """``Q(s,a) <- (1 - lr) Q(s,a) + lr (r + gamma max_a' Q(s',a'))``, the document's update."""
    return (1.0 - lr) * q_sa + lr * (reward + gamma * next_value)


#: :func:`bellman_update` for one cell, compiled: what the market engine's learners run
bellman_update1 = jit.njit(cache=True, inline="always")(bellman_update)
