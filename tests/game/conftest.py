"""Fixtures for the game's tests: a pure-Python reference trainer and trained runs shared
by the whole session.

The reference is written from the documents (docs/pages/protocol.md, the training
module's docstring, the draw order in market/game/train_kernel.py's docstring),
not from the kernel: plain lists, one move at a time, and the document's
online update (a mover updates its previous cell when it sees its next row).
It draws from its own pure-Python xoshiro256** with the same seeding, so the
compiled trainer must reproduce it bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from market.game.training import TrainConfig, preset, schedules, train

MASK = (1 << 64) - 1


class Xoshiro:
    """xoshiro256** (Blackman and Vigna) in plain Python integers."""

    def __init__(self, state: Any) -> None:
        self.s = [int(x) for x in state]

    @staticmethod
    def _rotl(x: int, k: int) -> int:
        return ((x << k) | (x >> (64 - k))) & MASK

    def next(self) -> int:
        s0, s1, s2, s3 = self.s
        result = (self._rotl((s1 * 5) & MASK, 7) * 9) & MASK
        t = (s1 << 17) & MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = self._rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return result

    def uniform(self) -> float:
        return (self.next() >> 11) * 2.0**-53

    @classmethod
    def for_seed(cls, seed: int, index: int) -> Xoshiro:
        state = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(4, np.uint64)
        return cls(state)


def reference_train(config: TrainConfig, index: int) -> dict[str, Any]:
    """Seed index ``index`` of ``config`` trained and tested in plain Python.

    Returns the final tables ``(R, S, A)`` per side, the per-cycle counts
    ``(C, 8)`` and the test counts ``(8,)`` in the order of
    ``market.game.train_kernel.COUNT_COLUMNS``.
    """
    P, T = config.prices, config.rounds
    S, A = P * T + 2, P + 2
    R = 2 if config.role_aware else 1
    rnd = Xoshiro.for_seed(config.seed, index)

    def legal(row: int) -> range:
        if row == 0:
            return range(0, P)  # the opening: offers only
        if row == S - 1:
            return range(0)
        if (row - 1) // P == T - 1:
            return range(P, P + 2)  # last round: accept or reject
        return range(0, A)

    q = [[[[config.init if a in legal(s) else 0.0 for a in range(A)] for s in range(S)]
          for _ in range(R)] for _ in range(2)]

    def copy(t: list) -> list:
        return [[list(row) for row in slot] for slot in t]

    def choose(row: list[float], options: range, eps: float) -> int:
        if eps > 0.0 and rnd.uniform() < eps:
            return options.start + int(rnd.uniform() * len(options))
        best = max(row[a] for a in options)
        maxima = [a for a in options if row[a] == best]
        return maxima[0] if len(maxima) == 1 else maxima[int(rnd.uniform() * len(maxima))]

    def episode(tables: list, first: int, eps: tuple[float, float], learns: tuple[bool, bool],
                lr: float, stale_first: bool = False, starts: float = 0.0,
                ) -> tuple[int, int, int]:
        """One negotiation; returns (n_moves, level, side that ended it)."""
        pending: list[Any] = [None, None]  # a side's last (slot, row, action), to update
        offer = 0  # action index of the offer on the table
        level = 0
        m0 = 0
        explores = starts > 0.0 and rnd.uniform() < starts  # an exploring start
        if explores:
            m0 = int(rnd.uniform() * 2 * T)
            offer = int(rnd.uniform() * P) if m0 > 0 else 0
        for m in range(m0, 2 * T):
            side = first if m % 2 == 0 else 1 - first
            role = 0 if side == first else 1
            slot = role if R == 2 else 0
            stale = m == 0 or (stale_first and role == 0)  # the opening row "s"
            row = 0 if stale else 1 + ((m - 1) // 2) * P + offer
            table = tables[side][slot]
            if learns[side] and pending[side] is not None:  # the document's online update
                ps, pr, pa = pending[side]
                nxt = max(table[row][a] for a in legal(row))
                cell = tables[side][ps][pr][pa]
                tables[side][ps][pr][pa] = (1.0 - lr) * cell + lr * (0.0 + config.gamma * nxt)
            a = choose(table[row], legal(row), 1.0 if explores and m == m0 else eps[side])
            pending[side] = (slot, row, a)
            if a >= P:
                level = offer + 1 if a == P else 0
                for s in (0, 1):
                    if learns[s] and pending[s] is not None:
                        reward = 0.0 if level == 0 else (
                            (level / P if s == 0 else 1.0 - level / P) + config.deal_bonus)
                        if level:  # the k-th offer (k = m - 1) is worth d^k, less k costs
                            d = config.seller_discount if s == 0 else config.buyer_discount
                            reward *= d ** (m - 1) if d < 1.0 else 1.0
                            c = config.seller_cost if s == 0 else config.buyer_cost
                            reward -= (m - 1) * c if c > 0.0 else 0.0
                        ps, pr, pa = pending[s]
                        cell = tables[s][ps][pr][pa]
                        tables[s][ps][pr][pa] = (1.0 - lr) * cell + lr * (reward + config.gamma
                                                                          * 0.0)
                return m + 1, level, side
            if config.breakdown > 0 and m >= 1 and rnd.uniform() < config.breakdown:
                for s in (0, 1):  # the talks broke down after a counter-offer: no deal, 0
                    if learns[s] and pending[s] is not None:
                        ps, pr, pa = pending[s]
                        cell = tables[s][ps][pr][pa]
                        tables[s][ps][pr][pa] = (1.0 - lr) * cell + lr * (0.0 + config.gamma
                                                                          * 0.0)
                return m + 1, -1, side
            offer = a
        raise AssertionError("the last move must accept or reject")

    def count(out: list[int], level: int, ender: int) -> None:
        if level > 0:
            out[2 * ender] += 1
            out[4] += level
            out[5] += P - level
            out[6] += 1
        elif level < 0:  # the talks broke down
            out[7] += 1
        else:
            out[2 * ender + 1] += 1

    eps_all, lr_all = schedules(config, 0, config.total_episodes)
    learners = {"both": (0, 1), "seller": (0,), "buyer": (1,)}[config.train]
    trainee = learners[0] if config.train != "both" else ("seller", "buyer").index(config.first)
    trainer = 1 - trainee
    trainee_snap, trainer_snap = copy(q[trainee]), copy(q[trainer])
    cycles = []
    for c in range(config.cycles):
        out = [0] * 8
        for e in range(config.episodes):
            g = c * config.episodes + e
            eps, lr = float(eps_all[g]), float(lr_all[g])
            if config.scheme == "frozen":
                tables = [None, None]
                tables[trainee], tables[trainer] = q[trainee], trainer_snap
                first = trainer if e % 2 == 0 else trainee
                learns = (trainee == 0, trainee == 1)
            else:
                tables = q
                first = 0 if g % 2 == 0 else 1
                learns = (0 in learners, 1 in learners)
            _, level, ender = episode(tables, first, tuple(eps if learns[s] else 0.0
                                                            for s in (0, 1)), learns, lr,
                                    starts=config.explore_starts)
            count(out, level, ender)
        cycles.append(out)
        if config.scheme == "frozen" and config.train == "both":
            new_trainee_snap = copy(q[trainer])
            trainer_snap, trainee_snap = trainee_snap, new_trainee_snap
            trainee, trainer = trainer, trainee
    test = [0] * 8
    for e in range(config.test_episodes):
        _, level, ender = episode(q, e % 2, (0.0, 0.0), (False, False), 0.0,
                                  stale_first=config.test_loop == "original")
        count(test, level, ender)
    return {"seller": np.array(q[0]), "buyer": np.array(q[1]),
            "cycles": np.array(cycles, dtype=np.int64).reshape(config.cycles, 8),
            "test": np.array(test, dtype=np.int64)}


@pytest.fixture(scope="session")
def xoshiro() -> type[Xoshiro]:
    return Xoshiro


@pytest.fixture(scope="session")
def reference() -> Callable[[TrainConfig, int], dict[str, Any]]:
    return reference_train


@pytest.fixture(scope="session")
def seed_preset_runs() -> dict[str, Any]:
    """The document's four regimes, 20 seeds each (the training guide's reproduction table)."""
    regimes = {
        "seller": dict(train="seller"),
        "buyer": dict(train="buyer"),
        "both, seller first": dict(train="both", first="seller"),
        "both, buyer first": dict(train="both", first="buyer"),
    }
    return {name: train(preset("seed", seeds=20, **kw)) for name, kw in regimes.items()}


@pytest.fixture(scope="session")
def default_preset_run() -> Any:
    """The tuned default preset, 20 seeds (NashConv at the end only)."""
    return train(preset("default", seeds=20), nash_conv=False)
