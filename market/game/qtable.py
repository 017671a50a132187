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

The primitives (:func:`greedy`, :func:`epsilon_greedy`,
:func:`bellman_update`, :func:`epsilon_schedule`) are the one definition of
how a tabular learner chooses and updates, shared by the two-agent learner,
the market learner and the trainer.
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


# --- choosing and learning -------------------------------------------------------------------
def nth_true(mask: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per row of ``mask`` (n, A), the column of its ``k``-th True (0-based; 0 if none)."""
    return (np.cumsum(mask, axis=1) > np.asarray(k)[:, None]).argmax(axis=1)


def pick(u: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Which of ``count`` items a uniform ``u`` picks: ``floor(u * count)``, below ``count``."""
    return np.minimum((u * count).astype(np.int64), np.maximum(count - 1, 0))


def greedy(q: np.ndarray, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Greedy action per row of ``q`` (n, A) among ``legal`` (A,) or (n, A), ties uniform.

    A row with one maximum draws nothing; a row with several draws one
    uniform ``u`` (rows in order) and plays the ``floor(u * count)``-th of them
    in increasing action order, as the training kernel does.
    """
    qm = np.where(legal, q, -np.inf)
    best = qm >= qm.max(axis=-1, keepdims=True)
    count = best.sum(axis=-1)
    a = best.argmax(axis=-1)
    tied = np.flatnonzero(count > 1)
    if tied.size:
        a[tied] = nth_true(best[tied], pick(rng.random(tied.size), count[tied]))
    return a


def random_legal(n: int, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform random legal action, ``n`` times; ``legal`` is one (A,) mask or (n, A) masks.

    One draw per row: an index into the one mask's legal actions, or a
    uniform that :func:`pick` turns into one of the row's legal actions.
    """
    if legal.ndim == 2:
        return nth_true(legal, pick(rng.random(n), legal.sum(axis=1)))
    idx = np.flatnonzero(legal)
    return idx[rng.integers(0, idx.size, size=n)]


def epsilon_greedy(
    q: np.ndarray, legal: np.ndarray, epsilon: np.ndarray | float, rng: np.random.Generator
) -> np.ndarray:
    """With probability ``epsilon`` a uniform legal action, else :func:`greedy`."""
    n = q.shape[0]
    a = greedy(q, legal, rng)
    explore = rng.random(n) < epsilon
    if explore.any():
        mask = legal[explore] if legal.ndim == 2 else legal
        a[explore] = random_legal(int(explore.sum()), mask, rng)
    return a


def bellman_update(
    q_sa: np.ndarray, reward: np.ndarray, next_value: np.ndarray, lr: np.ndarray | float,
    gamma: np.ndarray | float,
) -> np.ndarray:
    """``Q(s,a) <- (1 - lr) Q(s,a) + lr (r + gamma max_a' Q(s',a'))``, the document's update."""
    return (1.0 - lr) * q_sa + lr * (reward + gamma * next_value)


#: :func:`bellman_update` for one cell, compiled: what the market engine's learners run
bellman_update1 = jit.njit(cache=True, inline="always")(bellman_update)


def epsilon_schedule(
    episode: np.ndarray | int, start: float, end: float, decay: float
) -> np.ndarray | float:
    """Exploration ``end + (start - end) * exp(-decay * episode)`` (document: 1.0, 0.1, 0.001).

    ``exp`` is :func:`market.game.jit.exp`, the compiled market engine's own, so a market
    learner explores alike on both of the market's paths.
    """
    return end + (start - end) * jit.exp(-decay * np.asarray(episode, dtype=float))
