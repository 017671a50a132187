"""Tabular Q-learning with the document's states, actions and Bellman update.

The table layout and the choice and update rules live in
:mod:`market.game.qtable`. A population of learners keeps its tables
stacked as ``(n_members, R, S, A)``: ``R = 1`` is the document's layout (one
table whatever the role), ``R = 2`` the role-aware layout (index 0: rows
used when the agent moved first, 1: when it moved second), which is what
lets a learner tell the two subgames that share an observation apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.game import qtable
from market.game.qtable import bellman_update, epsilon_greedy, epsilon_schedule, legal_rows
from market.game.record import BatchRecord
from market.game.rules import SIDE_NAMES, Observation, Protocol
from market.game.tables import load_tables
from strategies.base import Strategy


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
    argument = "FILE.npz"

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
        S, A = qtable.n_rows(self.protocol), self.protocol.n_actions
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

    @classmethod
    def spec_params(cls, arg: str, side: int | str, protocol: Protocol) -> dict[str, Any]:
        """``qlearning:FILE.npz``: the side's saved table, checked against the game, played
        greedily (learning off)."""
        pair = load_tables(arg, protocol)
        name = side if isinstance(side, str) else SIDE_NAMES[side]
        return {"tables": getattr(pair, name), "learning": False}

    @classmethod
    def spec_game(cls, arg: str) -> Protocol:
        """A saved table fixes P and T."""
        return load_tables(arg).protocol

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
        state = qtable.row(self.protocol, obs.offer, t)
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
        d = qtable.terminal_row(self.protocol)
        for k in range(T):
            m = start + 2 * k
            live = m < n_moves
            if not live.any():
                break
            i = np.flatnonzero(live)
            mi = m[i]
            prev = acts[i, np.maximum(mi - 1, 0)]
            s = qtable.move_row(P, mi, prev)
            a = acts[i, mi]
            nxt = mi + 2
            cont = nxt < n_moves[i]
            seen = acts[i, np.minimum(nxt - 1, 2 * T - 1)]  # the reply, if the game went on
            s_next = np.where(cont, qtable.move_row(P, nxt, seen), d)
            mem, rl = member[i], role[i]
            next_q = np.where(self._legal_rows[s_next], self.tables[mem, rl, s_next], -np.inf)
            next_v = np.where(cont, next_q.max(axis=-1), 0.0)
            r = np.where(cont, 0.0, reward[i])
            self.tables[mem, rl, s, a] = bellman_update(
                self.tables[mem, rl, s, a], r, next_v, self.lr[mem], self.gamma[mem]
            )
        self.played[member] += 1
