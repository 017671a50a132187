"""Tabular Q-learning with the document's states, actions and Bellman update.

Layout (DESIGN.md): rows ``s``, then ``p.t`` for ``t`` in ``0..T-1`` and
``p`` in ``1..P`` (row ``1 + t*P + (p-1)``), then the terminal ``d``; columns
offers ``1..P``, then accept, then reject. A population of learners keeps its
tables stacked as ``(n_members, R, S, A)``: ``R = 1`` is the document's
layout (one table whatever the role), ``R = 2`` the role-aware layout (index
0: rows used when the agent moved first, 1: when it moved second), which is
what lets a learner tell the two subgames that share an observation apart.

The array functions (:func:`greedy`, :func:`epsilon_greedy`,
:func:`bellman_update`) are shared with the trainer, which runs many seeds
at once on the same code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.protocol import BatchRecord, Observation, Protocol
from strategies.base import Strategy


def greedy(q: np.ndarray, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Greedy action per row of ``q`` (n, A) among ``legal`` (A,) or (n, A), ties uniform."""
    qm = np.where(legal, q, -np.inf)
    best = qm >= qm.max(axis=-1, keepdims=True)
    keys = np.where(best, rng.random(q.shape), -1.0)
    return keys.argmax(axis=-1)


def random_legal(n: int, legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform random legal action, ``n`` times; ``legal`` is one (A,) mask or (n, A) masks."""
    if legal.ndim == 2:
        return np.where(legal, rng.random(legal.shape), -1.0).argmax(axis=1)
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


def legal_rows(protocol: Protocol) -> np.ndarray:
    """(S, A) mask of the actions legal in each document-layout row (``d``: none)."""
    S, A, P, T = protocol.n_states, protocol.n_actions, protocol.prices, protocol.rounds
    mask = np.ones((S, A), dtype=bool)
    mask[0, P:] = False  # start: offers only
    mask[1 + (T - 1) * P : 1 + T * P, :P] = False  # last round: accept/reject only
    mask[S - 1] = False  # terminal
    return mask


def bellman_update(
    q_sa: np.ndarray, reward: np.ndarray, next_value: np.ndarray, lr: np.ndarray | float,
    gamma: np.ndarray | float,
) -> np.ndarray:
    """``Q(s,a) <- (1 - lr) Q(s,a) + lr (r + gamma max_a' Q(s',a'))``, the document's update."""
    return (1.0 - lr) * q_sa + lr * (reward + gamma * next_value)


def epsilon_schedule(
    episode: np.ndarray | int, start: float, end: float, decay: float
) -> np.ndarray | float:
    """Exploration ``end + (start - end) * exp(-decay * episode)`` (document: 1.0, 0.1, 0.001)."""
    return end + (start - end) * np.exp(-decay * np.asarray(episode, dtype=float))


class QLearning(Strategy):
    """Epsilon-greedy tabular Q-learner; learns online when ``learning`` is on.

    Parameters (scalars, or arrays of length ``n_members`` for populations
    whose learning parameters differ per agent): ``lr``, ``gamma``,
    ``epsilon_start``, ``epsilon_end``, ``epsilon_decay`` (per negotiation the
    member has played), ``role_aware`` (table layout), ``learning``, and
    ``tables`` to start from (shape ``(S, A)``, ``(R, S, A)`` or
    ``(n_members, R, S, A)``).
    """

    name = "qlearning"
    classifier = {
        "sides": ("seller", "buyer"),
        "learns": True,
        "stochastic": True,
        "individually_rational": False,
        "memory": "Q-table",
    }
    needs_protocol = True

    def __init__(
        self,
        side: int | str = 0,
        n_members: int = 1,
        *,
        protocol: Protocol | None = None,
        tables: np.ndarray | None = None,
        role_aware: bool = True,
        learning: bool = True,
        lr: Any = 0.1,
        gamma: Any = 0.99,
        epsilon_start: Any = 0.0,
        epsilon_end: Any = 0.0,
        epsilon_decay: Any = 0.0,
    ) -> None:
        super().__init__(side, n_members)
        self.protocol = protocol or Protocol()
        S, A = self.protocol.n_states, self.protocol.n_actions
        if tables is None:
            R = 2 if role_aware else 1
            tables = np.zeros((self.n_members, R, S, A))
        else:
            tables = np.asarray(tables, dtype=float)
            if tables.ndim == 2:
                tables = tables[None]
            if tables.ndim == 3:
                tables = np.broadcast_to(tables, (self.n_members, *tables.shape)).copy()
            if tables.ndim != 4 or tables.shape[0] != self.n_members or tables.shape[2:] != (S, A):
                raise ValueError(
                    f"Q-tables must have shape (R, {S}, {A}) for P={self.protocol.prices}, "
                    f"T={self.protocol.rounds} (got {tables.shape[-3:]})"
                )
            if tables.shape[1] not in (1, 2):
                raise ValueError(f"Q-tables need 1 or 2 roles (got {tables.shape[1]})")
        self.tables = np.ascontiguousarray(tables, dtype=float)
        self.learning = bool(learning)
        per = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (self.n_members,)).copy()  # noqa: E731
        self.lr, self.gamma = per(lr), per(gamma)
        self.epsilon_start, self.epsilon_end = per(epsilon_start), per(epsilon_end)
        self.epsilon_decay = per(epsilon_decay)
        self.played = np.zeros(self.n_members, dtype=np.int64)
        self._legal_rows = legal_rows(self.protocol)
        self.params = {"role_aware": self.tables.shape[1] == 2, "learning": self.learning}

    @property
    def role_aware(self) -> bool:
        return self.tables.shape[1] == 2

    def epsilon(self, member: np.ndarray) -> np.ndarray:
        if not self.learning:
            return np.zeros(len(member))
        return epsilon_schedule(
            self.played[member],
            self.epsilon_start[member],
            self.epsilon_end[member],
            self.epsilon_decay[member],
        )

    def slots(self, first: np.ndarray, time_left: np.ndarray | None = None) -> np.ndarray:
        """Which of a member's tables a row uses: its role (role-aware) or the only one.

        Subclasses with more tables per member (the market clock) override it.
        """
        return np.where(first, 0, 1) if self.role_aware else np.zeros(len(first), dtype=np.intp)

    def candidates(self, obs: Observation) -> np.ndarray:
        """Actions the learner considers: the protocol's legal ones, (A,) or (n, A)."""
        return obs.legal

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        t = max(obs.t, 0)
        state = self.protocol.state_index(obs.offer, t)
        q = self.tables[obs.member, self.slots(obs.first, obs.time_left), state]
        return epsilon_greedy(q, self.candidates(obs), self.epsilon(obs.member), rng)

    def learn(
        self,
        record: BatchRecord,
        rows: np.ndarray,
        member: np.ndarray,
        reward: np.ndarray,
        time_left: np.ndarray | None = None,
    ) -> None:
        """Replay this side's moves in order and apply the Bellman update to each.

        Each member appears at most once per call (one negotiation per
        trader per step), so the fancy-indexed updates never collide.
        """
        if not self.learning or rows.size == 0:
            return
        P, T = self.protocol.prices, self.protocol.rounds
        acts = record.actions[rows].astype(np.int64)
        n_moves = record.n_moves[rows]
        first = record.first[rows] == self.side
        role = self.slots(first, time_left)
        start = np.where(first, 0, 1)
        d = self.protocol.terminal_state
        for k in range(T):
            m = start + 2 * k
            live = m < n_moves
            if not live.any():
                break
            i = np.flatnonzero(live)
            mi = m[i]
            prev = acts[i, np.maximum(mi - 1, 0)]
            s = np.where(mi == 0, 0, 1 + ((mi - 1) // 2) * P + prev)
            a = acts[i, mi]
            nxt = mi + 2
            cont = nxt < n_moves[i]
            s_next = np.where(
                cont, 1 + ((nxt - 1) // 2) * P + acts[i, np.minimum(nxt - 1, 2 * T - 1)], d
            )
            mem, rl = member[i], role[i]
            next_q = np.where(self._legal_rows[s_next], self.tables[mem, rl, s_next], -np.inf)
            next_v = np.where(cont, next_q.max(axis=-1), 0.0)
            r = np.where(cont, 0.0, reward[i])
            self.tables[mem, rl, s, a] = bellman_update(
                self.tables[mem, rl, s, a], r, next_v, self.lr[mem], self.gamma[mem]
            )
        self.played[member] += 1
