"""Q-learning as a market trader plays it: within its means, and aware of the clock.

The registered :class:`~strategies.qlearning.QLearning` is the document's
learner for the two-agent game, where the price levels *are* the payoffs and
every deal pays both sides something. In a market a trader has a cost or a
value, and a table indexed by ``(offer, round)`` alone cannot see it; an
exploring learner would happily sell below cost and teach itself only
through losses. :class:`MarketQLearning` keeps the same tables, update and
exploration, and adds two things:

- ``rational`` (default on): only individually rational actions are
  candidates (offers within the trader's acceptable levels, accept only an
  acceptable offer), so no trader ever loses money and allocative
  efficiency stays within ``[0, 1]``;
- the market clock (``buckets > 1``): the tables get one slot per
  time-left bucket (the last ``buckets - 1`` steps of the period each have
  their own, earlier steps share one), and walking away without a deal is
  worth the discounted value of trying again next step (a running estimate
  per member and bucket, learned from what negotiations begun with that
  much time left eventually earned) instead of 0. At the last step of a
  period a failed negotiation is worth nothing, so delay costs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.game.record import BatchRecord
from market.game.rules import Observation, Protocol
from strategies.base import KernelState
from strategies.qlearning import QLearning


class MarketQLearning(QLearning):
    """A population of online Q-learners for the market (see the module docstring)."""

    def __init__(
        self,
        side: int | str = 0,
        n_members: int = 1,
        *,
        protocol: Protocol | None = None,
        rational: bool = True,
        buckets: int = 1,
        **params: Any,
    ) -> None:
        super().__init__(side, n_members, protocol=protocol, **params)
        if int(buckets) < 1:
            raise ValueError(f"buckets must be >= 1 (got {buckets})")
        self.rational = bool(rational)
        self.buckets = int(buckets)
        self._roles_n = self.tables.shape[1]
        if self.buckets > 1:  # one slot per (role, time-left bucket)
            self.tables = np.repeat(self.tables, self.buckets, axis=1)
        self.wait_value = np.zeros((self.n_members, self.buckets))
        self.params.update(rational=self.rational, buckets=self.buckets)

    compiled = True

    @property
    def role_aware(self) -> bool:
        return self._roles_n == 2

    def kernel_state(self) -> KernelState:
        """The two-agent learner's arrays, with the clock's slots and the wait values."""
        state = super().kernel_state()
        state.config[1:4] = (True, self.rational, self.buckets)
        state.wait = self.wait_value
        return state

    def adopt(self, state: KernelState) -> None:
        super().adopt(state)
        self.wait_value = state.wait

    def slots(self, first: np.ndarray, time_left: np.ndarray | None = None) -> np.ndarray:
        role = super().slots(first)
        return role * self.buckets + self._bucket(time_left, len(first))

    def _bucket(self, time_left: np.ndarray | None, n: int) -> np.ndarray:
        """Bucket 0 is the last step of the period, ``buckets - 1`` every earlier one."""
        if self.buckets == 1 or time_left is None:
            return np.zeros(n, dtype=np.intp)
        return np.clip(np.asarray(time_left, dtype=np.intp), 1, self.buckets) - 1

    def candidates(self, obs: Observation) -> np.ndarray:
        """(n, A) candidate actions: the protocol's, narrowed to rational ones if asked."""
        P = obs.protocol.prices
        legal = np.broadcast_to(obs.legal, (len(obs), P + 2)).copy()
        if self.rational:
            levels = np.arange(1, P + 1)
            legal[:, :P] &= (levels >= obs.lo[:, None]) & (levels <= obs.hi[:, None])
            legal[:, P] &= self.acceptable(obs)
        return legal

    def learn(
        self,
        record: BatchRecord,
        rows: np.ndarray,
        member: np.ndarray,
        reward: np.ndarray,
        time_left: np.ndarray | None = None,
    ) -> None:
        """Bellman updates along this side's moves; see the module docstring for the clock."""
        if not self.learning or rows.size == 0:
            return
        reward = np.asarray(reward, dtype=float)
        deal = record.level[rows] > 0
        if self.buckets > 1 and time_left is not None:
            tl = np.asarray(time_left, dtype=np.intp)
            b = self._bucket(tl, rows.size)
            later = self._bucket(np.maximum(tl - 1, 1), rows.size)  # next step's bucket
            cont = np.where(tl > 1, self.gamma[member] * self.wait_value[member, later], 0.0)
            outcome = np.where(deal, reward, cont)
            self.wait_value[member, b] += self.lr[member] * (outcome - self.wait_value[member, b])
            reward = outcome
        super().learn(record, rows, member, reward, time_left)


def default_learner_params(side: int) -> dict[str, Any]:
    """The market's default for ``"qlearning"``: online from zero tables, some exploration.

    Exploration starts at 0.3 and decays toward 0.02 with each negotiation
    the member plays (``exp(-0.02 n)``: near the floor after ~200
    negotiations); learning rate 0.1, discount 0.95. ``side`` is accepted so
    that the defaults may differ per side one day; they do not now.
    """
    del side
    return dict(lr=0.1, gamma=0.95, epsilon_start=0.3, epsilon_end=0.02, epsilon_decay=0.02)


def drawn_learner_params(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Learning parameters drawn per agent (the document's "different learning parameters")."""
    return dict(
        lr=rng.uniform(0.02, 0.3, n),
        gamma=rng.uniform(0.8, 0.99, n),
        epsilon_start=rng.uniform(0.05, 0.5, n),
        epsilon_end=rng.uniform(0.0, 0.05, n),
        epsilon_decay=rng.uniform(0.005, 0.1, n),
    )


__all__ = ["MarketQLearning", "default_learner_params", "drawn_learner_params"]
