"""Training Q-learners for the two-agent game, many independent seeds at once.

Two schemes:

- ``frozen`` (the document's "Concurrent Q-Learning"): in every cycle one
  side, the *trainee*, learns epsilon-greedily with the Bellman update while
  the other, the *trainer*, plays greedily on a frozen snapshot. Roles swap
  every cycle, and the trainer of the next cycle plays the table the new
  trainer had *before* the cycle it just trained in (the document stores the
  trainee's table before a cycle and hands it over at the swap, so a side
  never faces an opponent fresh from training). The trainer moves first on
  even episodes of a cycle; exploration follows the in-cycle episode index.
- ``simultaneous``: both sides learn in every episode on their live tables
  (measured to converge with a role-aware table and
  exploration decaying to 0 over the whole run).

Seeds run in lockstep: both sides' tables live in one ``(2, n_seeds, R, S,
A)`` array and every episode advances all seeds together, so one
Python-level episode costs about the same for 1 or 1,000 seeds. Within one
episode a side never visits a row twice, so applying the Bellman updates
after the episode, all at once, equals updating online. With role-aware
tables in self-play, a seed's Seller-first and Buyer-first episodes touch
disjoint halves of the tables, so two consecutive episodes run as one batch.

Every random choice flows from one ``numpy`` Generator seeded with
``config.seed``: the same seed and number of seeds give bit-identical tables.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from market.game.qtable import bellman_update, legal_rows
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Protocol, level_rewards

TRAIN_CHOICES = ("both", "seller", "buyer")
SCHEMES = ("frozen", "simultaneous")
SCHEDULES = ("exp", "linear")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (and nothing that does not).

    ``epsilon_schedule``: ``exp`` is the document's
    ``end + (start - end) * exp(-decay * e)``; ``linear`` goes from ``start``
    to ``end`` over the first ``epsilon_decay`` fraction of the run (or cycle)
    and stays there. ``epsilon_clock``: ``cycle`` counts ``e`` from 0 in every cycle
    (the document), ``run`` over the whole run. ``lr_end``: if set, the
    learning rate falls linearly from ``lr`` to ``lr_end`` over the run.
    ``init``: initial value of every legal cell (optimism drives exploration).
    """

    prices: int = 5
    rounds: int = 5
    cycles: int = 50
    episodes: int = 100
    test_episodes: int = 1000
    train: str = "both"
    first: str = "seller"
    scheme: str = "frozen"
    role_aware: bool = False
    lr: float = 0.1
    lr_end: float | None = None
    gamma: float = 0.99
    epsilon_start: float = 1.0
    epsilon_end: float = 0.1
    epsilon_decay: float = 0.001
    epsilon_schedule: str = "exp"
    epsilon_clock: str = "cycle"
    init: float = 0.0
    seed: int = 0
    seeds: int = 1

    def __post_init__(self) -> None:
        checks: list[tuple[bool, str]] = [
            (self.cycles >= 0, f"cycles must be >= 0 (got {self.cycles})"),
            (self.episodes >= 1, f"episodes must be >= 1 (got {self.episodes})"),
            (self.test_episodes >= 0, f"test_episodes must be >= 0 (got {self.test_episodes})"),
            (self.seeds >= 1, f"seeds must be >= 1 (got {self.seeds})"),
            (self.seed >= 0, f"seed must be >= 0 (got {self.seed})"),
            (self.train in TRAIN_CHOICES, f"train must be one of {TRAIN_CHOICES}"),
            (self.first in SIDE_NAMES, f"first must be one of {SIDE_NAMES}"),
            (self.scheme in SCHEMES, f"scheme must be one of {SCHEMES}"),
            (self.epsilon_schedule in SCHEDULES, f"epsilon_schedule must be one of {SCHEDULES}"),
            (self.epsilon_clock in ("cycle", "run"), "epsilon_clock must be 'cycle' or 'run'"),
            (0.0 < self.lr <= 1.0, f"lr must be in (0, 1] (got {self.lr})"),
            (self.lr_end is None or 0.0 <= self.lr_end <= 1.0, "lr_end must be in [0, 1]"),
            (0.0 <= self.gamma <= 1.0, f"gamma must be in [0, 1] (got {self.gamma})"),
            (0.0 <= self.epsilon_start <= 1.0, "epsilon_start must be in [0, 1]"),
            (0.0 <= self.epsilon_end <= 1.0, "epsilon_end must be in [0, 1]"),
            (self.epsilon_decay >= 0.0, "epsilon_decay must be >= 0"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)
        Protocol(self.prices, self.rounds)  # validates P and T

    @property
    def protocol(self) -> Protocol:
        return Protocol(self.prices, self.rounds)

    @property
    def total_episodes(self) -> int:
        return self.cycles * self.episodes

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: ``seed``: the document's exact configuration. ``default``: tuned so that
#: self-play converges (docs/reference-figures.md): role-aware tables,
#: both sides learning at once, 150,000 episodes, exploration falling linearly
#: from 1 to 0 over the run, learning rate from 0.2 to 0.02, no discount.
#: Measured: NashConv 0 on 20 of 20 seeds (seed 0) and 19 of 20 (seed 1), about
#: 2.5 s of training per seed with 20 seeds trained together; with 100,000
#: episodes 17 of 20, and with exploration reaching 0 at 80% of the run 11-14.
PRESETS: dict[str, TrainConfig] = {
    "seed": TrainConfig(),
    "default": TrainConfig(
        cycles=150,
        episodes=1000,
        scheme="simultaneous",
        role_aware=True,
        lr=0.2,
        lr_end=0.02,
        gamma=1.0,
        epsilon_start=1.0,
        epsilon_end=0.0,
        epsilon_decay=1.0,
        epsilon_schedule="linear",
        epsilon_clock="run",
    ),
}


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A preset with some fields replaced (``None`` values are ignored)."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)} (got {name!r})")
    return PRESETS[name].replace(**{k: v for k, v in overrides.items() if v is not None})


# --- schedules ------------------------------------------------------------------------------
def exploration(config: TrainConfig, episode_in_cycle: int, episode_in_run: int) -> float:
    """Exploration rate of a learner in the given episode."""
    e = episode_in_cycle if config.epsilon_clock == "cycle" else episode_in_run
    start, end = config.epsilon_start, config.epsilon_end
    if config.epsilon_schedule == "exp":
        return float(end + (start - end) * np.exp(-config.epsilon_decay * e))
    span = config.epsilon_decay * (
        config.episodes if config.epsilon_clock == "cycle" else config.total_episodes
    )
    frac = min(1.0, e / max(span - 1.0, 1.0))
    return float(start + (end - start) * frac)


def learning_rate(config: TrainConfig, episode_in_run: int) -> float:
    """Learning rate in the given episode (constant, or linear to ``lr_end``)."""
    if config.lr_end is None or config.total_episodes <= 1:
        return config.lr
    frac = episode_in_run / (config.total_episodes - 1)
    return float(config.lr + (config.lr_end - config.lr) * frac)


# --- one batch of episodes --------------------------------------------------------------
@dataclass
class Episodes:
    """One episode per seed: actions ``(n, 2T)`` (-1 after the end), moves, deal level."""

    first: int | np.ndarray
    actions: np.ndarray
    n_moves: np.ndarray
    level: np.ndarray
    batch: Batch | None = None

    def rewards(self, side: int, prices: int) -> np.ndarray:
        """The document's rewards: Seller ``p / P``, Buyer ``1 - p / P`` at a deal, else 0."""
        deal = self.level > 0
        if side == SELLER:
            return np.where(deal, self.level / prices, 0.0)
        return np.where(deal, 1.0 - self.level / prices, 0.0)

    def ender(self) -> np.ndarray:
        """Side that made the last move (accepted or rejected)."""
        return ender(self.first, self.n_moves)


def ender(first: int | np.ndarray, n_moves: np.ndarray) -> np.ndarray:
    """Side that made the last move of negotiations with ``n_moves`` moves."""
    return np.where((n_moves - 1) % 2 == 0, first, 1 - np.asarray(first))


def choose_t(
    q: np.ndarray, legal: slice, epsilon: float | np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Epsilon-greedy choice per column of ``q`` (A, n) among the actions in ``legal``.

    The same distribution as :func:`strategies.qlearning.epsilon_greedy`
    (greedy with uniform ties; with probability ``epsilon`` a uniform legal
    action), written for speed because it is the trainer's innermost step:

    - actions are rows, so every reduction runs across at most ``A`` rows
      of ``n`` contiguous values (numpy is slow along a short last axis);
    - the legal actions of a move always form one contiguous block (offers
      only at the start, accept/reject only in the last round, everything
      otherwise), so a slice replaces the mask;
    - each candidate gets a 32-bit key: ``31 - b`` random bits above its
      action index (``b`` bits; 28 random bits for P = 5), plus ``2**31`` if
      it is a maximum of a non-exploring column. The largest key picks a
      uniform maximum (or, when exploring, a uniform legal action) and its
      low bits are the action: one max, no argmax. Two equal random parts
      (probability ``2**-28`` for P = 5) favour the larger index.
    """
    lo = legal.start or 0
    qs = q[legal]
    w, n = qs.shape
    bits = max(1, (w - 1).bit_length())
    if bits > 12:
        raise ValueError(f"too many actions for one choice ({w})")
    raw = rng.bit_generator.random_raw(((w + 1) * n + 1) // 2).view(np.uint32)
    raw = raw[: (w + 1) * n].reshape(w + 1, n)
    lift = qs >= np.maximum.reduce(qs, axis=0)
    if np.ndim(epsilon) or epsilon > 0.0:
        lift &= raw[w] >= np.asarray(epsilon, dtype=np.float64) * 2.0**32  # else: explore
    keys = raw[:w] & np.uint32((1 << 31) - (1 << bits))  # 31 - bits random bits ...
    keys |= _INDEX[:w]  # ... above the action index
    keys |= np.left_shift(lift, 31, dtype=np.uint32)
    a = (np.maximum.reduce(keys, axis=0) & np.uint32((1 << bits) - 1)).astype(np.int64)
    return a + lo if lo else a


_INDEX = np.arange(1 << 12, dtype=np.uint32)[:, None]


def choose(
    q: np.ndarray, legal: slice, epsilon: float | np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """:func:`choose_t` for ``q`` laid out (n, A), one row per negotiation."""
    return choose_t(np.ascontiguousarray(q.T), legal, epsilon, rng)


def legal_block(protocol: Protocol, move: int) -> slice:
    """The legal actions at ``move`` as a slice of columns (see :meth:`Protocol.legal`)."""
    idx = np.flatnonzero(protocol.legal(move))
    return slice(int(idx[0]), int(idx[-1]) + 1)


@functools.lru_cache(maxsize=64)
def _blocks(protocol: Protocol) -> tuple[slice, ...]:
    return tuple(legal_block(protocol, m) for m in range(protocol.max_moves))


@dataclass
class Batch:
    """Which negotiations one lockstep batch plays: a seed and a first mover per row.

    Several rows may share a seed when they touch disjoint parts of its
    tables (role-aware tables: the Seller-first and Buyer-first negotiations
    of one seed use different halves), which lets the trainer play two
    consecutive episodes of a seed at once.
    """

    seed: np.ndarray
    first: np.ndarray

    @classmethod
    def all_seeds(cls, n: int, first: int) -> Batch:
        return cls(np.arange(n), np.full(n, first, dtype=np.int64))

    def row_base(self, shape: tuple[int, ...], side: np.ndarray, role: np.ndarray) -> np.ndarray:
        """Index of row 0 of ``side``'s table (``role``) among all rows of a stack.

        ``shape`` is the stack's ``(2, n, R, S, A)``; with one role ``role``
        is ignored.
        """
        _, n, R, S, _ = shape
        r = role if R == 2 else 0
        return ((side * n + self.seed) * R + r) * S


class Store:
    """Both sides' tables of all seeds, stored action-major: ``qt`` is ``(A, rows)``.

    Row ``((side * n + seed) * R + role) * S + state`` of the stack
    ``(2, n, R, S, A)`` is column of ``qt``. Gathering the Q-values of a
    batch then yields an ``(A, batch)`` block whose reductions over actions
    run across a few long contiguous rows, which is what makes the choice
    and the update fast; the stack layout is rebuilt only between cycles.
    """

    def __init__(self, stack: np.ndarray) -> None:
        if stack.ndim != 5 or stack.shape[0] != 2:
            raise ValueError(f"expected a (2, n, R, S, A) stack of tables (got {stack.shape})")
        self.shape = tuple(stack.shape)
        self.qt = np.ascontiguousarray(stack.reshape(-1, stack.shape[-1]).T)
        self.flat = self.qt.reshape(-1)  # a view: cell (row, a) is a * rows + row

    @property
    def rows(self) -> int:
        return self.qt.shape[1]

    def _side(self, side: int) -> slice:
        per = self.rows // 2
        return slice(side * per, (side + 1) * per)

    def stack(self) -> np.ndarray:
        """The tables as a new ``(2, n, R, S, A)`` array."""
        return np.ascontiguousarray(self.qt.T).reshape(self.shape)

    def get(self, side: int) -> np.ndarray:
        """A copy of one side's tables, ``(n, R, S, A)``."""
        return np.ascontiguousarray(self.qt[:, self._side(side)].T).reshape(self.shape[1:])

    def set(self, side: int, tables: np.ndarray) -> None:
        self.qt[:, self._side(side)] = tables.reshape(-1, self.shape[-1]).T


@dataclass
class GreedyIndex:
    """The greedy choices of one side's frozen tables, ready for lookup.

    ``order[r, :count[r]]`` are the legal maxima of row ``r`` (rows of that
    side only, ``offset`` = its first global row). A frozen trainer, or any
    side played greedily, then picks uniformly among them with one random
    number per negotiation instead of scanning its Q-values at every move.
    """

    offset: int
    count: np.ndarray
    order: np.ndarray

    @classmethod
    def of(cls, store: Store, side: int, legal: np.ndarray) -> GreedyIndex:
        sl = store._side(side)
        q = store.qt[:, sl]  # (A, rows): reductions run across A contiguous rows
        S, A = legal.shape
        rows = q.shape[1]
        ok = np.tile(legal.T, (1, rows // S))
        qm = np.where(ok, q, -np.inf)
        best = (qm >= np.maximum.reduce(qm, axis=0)) & ok
        count = np.zeros(rows, dtype=np.int64)
        order = np.zeros(rows * A, dtype=np.int64)
        for j in range(A):  # list each row's maxima in increasing action order
            r = np.flatnonzero(best[j])
            order[r * A + count[r]] = j
            count[r] += 1
        return cls(sl.start, count, order.reshape(rows, A))

    def pick(self, row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        r = row - self.offset
        k = (rng.random(r.size) * self.count[r]).astype(np.int64)
        return self.order.reshape(-1)[r * self.order.shape[1] + k]


def play_store(
    store: Store,
    first: int | Batch,
    epsilon: tuple[float, float] | np.ndarray,
    protocol: Protocol,
    rng: np.random.Generator,
    greedy: dict[int, GreedyIndex] | None = None,
) -> Episodes:
    """Play one negotiation per batch row in lockstep on the tables in ``store``.

    ``greedy``: :class:`GreedyIndex` of sides that play greedily on tables
    that do not change during the call (used when every row has the same
    first mover).

    ``first``: the first mover of every seed, or a :class:`Batch`. Each side
    acts epsilon-greedily with ``epsilon[side]`` (0: greedy; or
    ``epsilon[side, row]`` per row) among the legal actions, ties uniform.
    """
    P, T = protocol.prices, protocol.rounds
    shape = store.shape
    batch = Batch.all_seeds(shape[1], first) if isinstance(first, int | np.integer) else first
    n = len(batch.seed)
    actions = np.full((n, 2 * T), -1, dtype=np.int64)
    level = np.zeros(n, dtype=np.int64)
    movers = (batch.first, 1 - batch.first)  # who moves at even and at odd moves
    base = (batch.row_base(shape, movers[0], np.zeros(n, np.int64)),
            batch.row_base(shape, movers[1], np.ones(n, np.int64)))
    eps_arr = np.asarray(epsilon, dtype=float)  # (2,) per side or (2, rows)
    same = eps_arr.ndim == 1 and eps_arr[0] == eps_arr[1]
    uniform = isinstance(first, int | np.integer)
    if greedy and not (uniform and eps_arr.ndim == 1 and all(
            eps_arr[g] == 0.0 for g in greedy)):
        raise ValueError("greedy lookup needs one first mover and no exploration for those sides")
    first = int(first) if uniform else 0
    ai = np.arange(n)  # rows still negotiating
    row = base[0].copy()  # the first mover's start row "s"
    blocks = _blocks(protocol)
    flat_actions = actions.reshape(-1)
    n_moves = np.full(n, 2 * T, dtype=np.int64)
    two_t = 2 * T
    offer = np.zeros(n, dtype=np.int64)  # action index of the offer on the table
    for m in range(two_t):
        if same:
            e: float | np.ndarray = float(eps_arr[0])
        elif eps_arr.ndim == 1:
            e = eps_arr[movers[m % 2][ai]]
        else:
            e = eps_arr[movers[m % 2][ai], ai]
        side = first if m % 2 == 0 else 1 - first  # meaningful when ``first`` is an int
        if greedy and uniform and side in greedy:
            a = greedy[side].pick(row, rng)
        else:
            a = _explore_or_choose(store, row, blocks[m], e, rng)
        flat_actions[ai * two_t + m] = a
        cont = a < P
        if not cont.all():
            n_moves[ai[~cont]] = m + 1
            acc = a == P
            if acc.any():
                level[ai[acc]] = offer[acc] + 1
            ai, a = ai[cont], a[cont]
            if ai.size == 0:
                break
        offer = a
        # the offer just made, seen by the next mover in row 1 + t * P + (level - 1)
        row = base[(m + 1) % 2][ai] + (1 + (m // 2) * P) + a
    first_out = first if uniform else batch.first
    return Episodes(first_out, actions, n_moves, level, batch)


def _explore_or_choose(
    store: Store, row: np.ndarray, legal: slice, epsilon: float | np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Epsilon-greedy actions for the negotiations at table rows ``row``.

    Draws the exploring negotiations first and reads Q-values only for the
    others: under the document's schedule (exploration above 0.9) that
    skips most of the table reads. Same distribution as :func:`choose_t`.
    """
    if not (np.ndim(epsilon) or epsilon > 0.0):
        return choose_t(np.take(store.qt, row, axis=1), legal, 0.0, rng)
    explore = rng.random(row.size) < epsilon
    k = int(np.count_nonzero(explore))
    if k == 0:
        return choose_t(np.take(store.qt, row, axis=1), legal, 0.0, rng)
    lo, hi = legal.start or 0, legal.stop
    a = np.empty(row.size, dtype=np.int64)
    a[explore] = lo + (rng.random(k) * (hi - lo)).astype(np.int64)
    if k < row.size:
        keep = ~explore
        a[keep] = choose_t(np.take(store.qt, row[keep], axis=1), legal, 0.0, rng)
    return a


def play_stacked(
    stack: np.ndarray,
    first: int | Batch,
    epsilon: tuple[float, float] | np.ndarray,
    protocol: Protocol,
    rng: np.random.Generator,
) -> Episodes:
    """:func:`play_store` on a ``(2, n, R, S, A)`` stack of tables."""
    return play_store(Store(stack), first, epsilon, protocol, rng)


def play(
    tables: tuple[np.ndarray, np.ndarray],
    first: int,
    epsilon: tuple[float, float],
    protocol: Protocol,
    rng: np.random.Generator,
) -> Episodes:
    """Play one episode for every seed; ``tables[side]`` is ``(n, R, S, A)``, same R."""
    return play_store(Store(_stack(tables)), first, epsilon, protocol, rng)


def _stack(tables: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    if tables[0].shape != tables[1].shape:
        raise ValueError(
            f"Seller and Buyer tables differ in shape ({tables[0].shape} vs {tables[1].shape})"
        )
    return np.stack(tables)


def learn_store(
    store: Store,
    sides: tuple[int, ...],
    ep: Episodes,
    rewards: np.ndarray,
    lr: float | np.ndarray,
    gamma: float,
    legal: np.ndarray,
) -> None:
    """Bellman-update the tables of ``sides`` in ``store`` in place.

    ``rewards`` is ``(2, rows)``; ``lr`` a scalar or one per batch row. Each
    move's target is the reward if the negotiation ended before the mover's
    next move, else ``gamma`` times the value (max over legal actions) of the
    row it observed next: exactly the document's update. A side never
    visits a row twice in one negotiation and each update reads only the row
    its move led to, which online learning has not touched yet in this
    episode; so all of an episode's updates, for both sides, are applied in
    one vectorised step and equal the document's one-by-one updates.
    """
    P = legal.shape[1] - 2
    n_rows, two_t = ep.actions.shape
    T = two_t // 2
    batch = ep.batch if ep.batch is not None else Batch.all_seeds(store.shape[1], ep.first)
    if len(sides) == 1 and isinstance(ep.first, int | np.integer):
        ms = np.arange(0 if sides[0] == ep.first else 1, two_t, 2)  # that side's moves
        i, k = np.nonzero(ms[None, :] < ep.n_moves[:, None])
        m = ms[k]
    else:
        ms = np.arange(two_t)
        live = ms[None, :] < ep.n_moves[:, None]
        if len(sides) == 1:
            mover = np.where(ms % 2 == 0, batch.first[:, None], 1 - batch.first[:, None])
            live &= mover == sides[0]
        i, m = np.nonzero(live)
    acts = ep.actions.reshape(-1)
    at = i * two_t + m
    a = acts[at]
    prev = np.take(acts, at - 1, mode="clip")  # the offer this move answered (m >= 1)
    seen = np.take(acts, at + 1, mode="clip")  # the reply: an offer if the game went on
    role = m & 1  # 0: the first mover's moves, 1: the second mover's
    side = batch.first[i] ^ role
    s = np.where(m == 0, 0, 1 + ((m - 1) >> 1) * P + prev)
    cont = m + 2 < ep.n_moves[i]
    s_next = np.where(cont, 1 + ((m + 1) >> 1) * P + seen, 0)
    base = Batch(batch.seed[i], batch.first[i]).row_base(store.shape, side, role)
    q_next = np.take(store.qt, base + s_next, axis=1)  # (A, moves)
    # max over the legal actions of the next row: all of them, but only accept and
    # reject in the last round (the start row is never a next row)
    v_next = np.where(s_next > (T - 1) * P, np.maximum(q_next[P], q_next[P + 1]),
                      np.maximum.reduce(q_next, axis=0))
    target_v = np.where(cont, v_next, 0.0)
    r = np.where(cont, 0.0, rewards.reshape(-1)[side * n_rows + i])
    cell = a * store.rows + base + s
    rate = lr[i] if np.ndim(lr) else lr
    store.flat[cell] = bellman_update(store.flat[cell], r, target_v, rate, gamma)


def learn_stacked(
    stack: np.ndarray,
    sides: tuple[int, ...],
    ep: Episodes,
    rewards: np.ndarray,
    lr: float | np.ndarray,
    gamma: float,
    legal: np.ndarray,
) -> None:
    """:func:`learn_store` on a ``(2, n, R, S, A)`` stack, updated in place."""
    store = Store(stack)
    learn_store(store, sides, ep, rewards, lr, gamma, legal)
    stack[...] = store.stack()


def learn(
    table: np.ndarray,
    side: int,
    ep: Episodes,
    reward: np.ndarray,
    lr: float,
    gamma: float,
    legal: np.ndarray,
) -> None:
    """Bellman-update one side's ``table`` (n, R, S, A) in place (see :func:`learn_stacked`)."""
    stack = np.stack([table, table])
    rewards = np.stack([reward, reward])
    learn_stacked(stack, (side,), ep, rewards, lr, gamma, legal)
    table[...] = stack[side]


# --- results --------------------------------------------------------------------------------
@dataclass
class TrainResult:
    """Tables ``(n_seeds, R, S, A)`` per side, per-cycle history and test figures.

    ``history``: one row per (seed, cycle): who trained, validated and
    rejected per side (the side that accepted or walked away), wallets (Seller:
    sum of deal levels; Buyer: sum of ``P - level``), deals, and NashConv of
    the tables at the end of the cycle (if computed). ``test``: one row per
    seed with the greedy test (sampled) and, if computed, the exact
    expectation and NashConv of the final tables. ``trainer_versions[c]``: for
    the frozen scheme, the cycle at whose start the table the trainer plays
    in cycle ``c`` was taken (0: the initial tables); ``c - 1`` for ``c >= 1``
    when both sides train.
    """

    config: TrainConfig
    seller: np.ndarray
    buyer: np.ndarray
    history: pd.DataFrame
    test: pd.DataFrame
    train_seconds: float
    trainer_versions: list[int] = field(default_factory=list)

    @property
    def protocol(self) -> Protocol:
        return self.config.protocol

    def tables(self, seed_index: int = 0) -> tuple[np.ndarray, np.ndarray]:
        return self.seller[seed_index], self.buyer[seed_index]


def _counts(first: np.ndarray, n_moves: np.ndarray, level: np.ndarray, prices: int
            ) -> dict[str, np.ndarray]:
    """Per-seed totals over a block of episodes: ``first`` (E,), ``n_moves``/``level`` (E, n)."""
    deal = level > 0
    by = ender(first[:, None], n_moves)
    return {
        "seller_validated": (deal & (by == SELLER)).sum(axis=0),
        "seller_rejected": (~deal & (by == SELLER)).sum(axis=0),
        "buyer_validated": (deal & (by == BUYER)).sum(axis=0),
        "buyer_rejected": (~deal & (by == BUYER)).sum(axis=0),
        "seller_wallet": level.sum(axis=0),
        "buyer_wallet": np.where(deal, prices - level, 0).sum(axis=0),
        "deals": deal.sum(axis=0),
    }


COUNT_COLUMNS = (
    "seller_validated",
    "seller_rejected",
    "buyer_validated",
    "buyer_rejected",
    "seller_wallet",
    "buyer_wallet",
    "deals",
)


def initial_tables(config: TrainConfig, start: Any | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fresh ``(n_seeds, R, S, A)`` tables, or copies of ``start`` (a TablePair) per seed."""
    protocol = config.protocol
    if start is not None:
        if start.protocol != protocol:
            raise ValueError(
                f"loaded tables are for P={start.protocol.prices}, T={start.protocol.rounds} "
                f"but training uses P={protocol.prices}, T={protocol.rounds}"
            )
        return tuple(  # type: ignore[return-value]
            np.repeat(np.asarray(t, dtype=float)[None], config.seeds, axis=0)
            for t in (start.seller, start.buyer)
        )
    R = 2 if config.role_aware else 1
    legal = legal_rows(protocol)
    base = np.where(legal, config.init, 0.0)
    return tuple(  # type: ignore[return-value]
        np.repeat(np.repeat(base[None], R, axis=0)[None], config.seeds, axis=0) for _ in range(2)
    )


def test_tables(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, episodes: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Greedy test, no updates, first mover alternating (Seller first in episode 0).

    Returns per-seed totals (the keys of :data:`COUNT_COLUMNS`).
    """
    store = Store(_stack((seller, buyer)))
    legal = legal_rows(protocol)
    greedy = {side: GreedyIndex.of(store, side, legal) for side in (SELLER, BUYER)}
    n = seller.shape[0]
    firsts = np.arange(episodes) % 2
    n_moves = np.zeros((episodes, n), dtype=np.int64)
    level = np.zeros((episodes, n), dtype=np.int64)
    for e in range(episodes):
        ep = play_store(store, int(firsts[e]), (0.0, 0.0), protocol, rng, greedy)
        n_moves[e], level[e] = ep.n_moves, ep.level
    return _counts(firsts, n_moves, level, protocol.prices)


def _nash_conv_all(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol) -> np.ndarray:
    from market.game import evaluation

    return np.asarray(evaluation.nash_conv(seller, buyer, protocol), dtype=float)


def train(
    config: TrainConfig,
    start: Any | None = None,
    *,
    nash_conv: bool = True,
    exact: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_cycle: Callable[[int, int, np.ndarray, list[np.ndarray]], None] | None = None,
) -> TrainResult:
    """Train ``config.seeds`` independent seeds together, then test them.

    ``start``: a :class:`~market.game.tables.TablePair` to start from (copied to
    every seed). ``nash_conv``: compute NashConv per cycle and at the end
    (exact, by :mod:`market.game.evaluation`). ``exact``: also the exact expected
    test figures. ``progress(done, total)`` is called after every episode
    batch; ``on_cycle(cycle, trainee, trainer_table, live)`` at the start of
    each cycle with the table the trainer will play (frozen scheme; the
    trainer's live table otherwise) and both live tables, for inspection.
    """
    protocol = config.protocol
    rng = np.random.default_rng(config.seed)
    store = Store(_stack(initial_tables(config, start)))  # the live tables
    legal = legal_rows(protocol)
    learners = {"both": (SELLER, BUYER), "seller": (SELLER,), "buyer": (BUYER,)}[config.train]
    trainee = SELLER if config.train == "both" and config.first == "seller" else (
        BUYER if config.train == "both" else learners[0]
    )
    trainer = 1 - trainee
    # Frozen scheme, the document's variables: the trainer plays ``trainer_snap``;
    # ``trainee_snap`` is the trainee's table before the current cycle.
    trainee_snap, trainer_snap = store.get(trainee), store.get(trainer)
    trainee_ver, trainer_ver = 0, 0  # cycle at whose start each snapshot was taken
    versions: list[int] = []
    history: list[pd.DataFrame] = []
    n, E, P = config.seeds, config.episodes, protocol.prices
    total = config.total_episodes + config.test_episodes
    done = 0
    eval_seconds = 0.0
    t0 = time.perf_counter()
    for cycle in range(config.cycles):
        frozen = config.scheme == "frozen"
        if on_cycle is not None:
            live = [store.get(0), store.get(1)]
            on_cycle(cycle, trainee, trainer_snap if frozen else live[trainer], live)
        if frozen:
            versions.append(trainer_ver)
            trainer_live = store.get(trainer)
            store.set(trainer, trainer_snap)  # the trainer plays its frozen snapshot
            sides: tuple[int, ...] = (trainee,)
            greedy = {trainer: GreedyIndex.of(store, trainer, legal)}
        else:
            sides = learners
            greedy = {}
        firsts = np.empty(E, dtype=np.int64)
        n_moves = np.zeros((E, n), dtype=np.int64)
        level = np.zeros((E, n), dtype=np.int64)
        # Role-aware self-play: a seed's Seller-first and Buyer-first negotiations use
        # disjoint halves of both tables, so two consecutive episodes run as one batch
        # (the same updates as one after the other, in half the Python steps).
        pairs = not frozen and store.shape[2] == 2
        e = 0
        while e < E:
            g = cycle * E + e
            if frozen:
                first = trainer if e % 2 == 0 else trainee
            else:
                first = SELLER if g % 2 == 0 else BUYER
            k = 2 if pairs and e + 1 < E else 1
            eps = np.array([exploration(config, e + j, g + j) for j in range(k)])
            lr = np.array([learning_rate(config, g + j) for j in range(k)])
            eps_side = np.array([eps if s_ in sides else 0.0 * eps for s_ in (SELLER, BUYER)])
            if k == 1:
                ep = play_store(store, first, tuple(eps_side[:, 0]), protocol, rng, greedy)
                learn_store(store, sides, ep, level_rewards(ep.level, P), float(lr[0]),
                              config.gamma, legal)
                firsts[e], n_moves[e], level[e] = first, ep.n_moves, ep.level
            else:
                batch = Batch(np.tile(np.arange(n), 2), np.repeat([first, 1 - first], n))
                ep = play_store(store, batch, np.repeat(eps_side, n, axis=1), protocol, rng)
                learn_store(store, sides, ep, level_rewards(ep.level, P),
                              np.repeat(lr, n), config.gamma, legal)
                firsts[e:e + 2] = (first, 1 - first)
                n_moves[e:e + 2] = ep.n_moves.reshape(2, n)
                level[e:e + 2] = ep.level.reshape(2, n)
            e += k
        if frozen:
            store.set(trainer, trainer_live)
        done += E
        if progress is not None:
            progress(done, total)
        frame = pd.DataFrame(_counts(firsts, n_moves, level, P))
        frame.insert(0, "seed", np.arange(n))
        frame.insert(1, "cycle", cycle)
        frame.insert(2, "trainee", SIDE_NAMES[trainee] if frozen else config.train)
        if nash_conv:
            t_eval = time.perf_counter()
            frame["nash_conv"] = _nash_conv_all(store.get(0), store.get(1), protocol)
            eval_seconds += time.perf_counter() - t_eval
        history.append(frame)
        if frozen and config.train == "both":
            # The document's swap: the old trainer's live table becomes the new trainee's
            # "before" snapshot; the old trainee's "before" snapshot becomes the new trainer.
            new_trainee_snap = store.get(trainer)
            trainer_snap, trainee_snap = trainee_snap, new_trainee_snap
            trainer_ver, trainee_ver = trainee_ver, cycle + 1
            trainee, trainer = trainer, trainee
    seconds = time.perf_counter() - t0 - eval_seconds  # training only, not NashConv
    live = [store.get(0), store.get(1)]
    tot = test_tables(live[0], live[1], protocol, config.test_episodes, rng)
    if progress is not None:
        progress(total, total)
    test = pd.DataFrame(tot)
    test.insert(0, "seed", np.arange(n))
    if exact and config.test_episodes > 0:
        from market.game import evaluation

        rows = [
            evaluation.exact_test(live[0][i], live[1][i], protocol, episodes=config.test_episodes)
            for i in range(n)
        ]
        ex = pd.DataFrame(rows).add_prefix("exact_")
        test = pd.concat([test, ex], axis=1)
    if nash_conv:
        test["nash_conv"] = _nash_conv_all(live[0], live[1], protocol)
    hist = pd.concat(history, ignore_index=True) if history else pd.DataFrame(
        columns=["seed", "cycle", "trainee", *COUNT_COLUMNS]
    )
    return TrainResult(config, live[0], live[1], hist, test, seconds, versions)


def summarize(values: np.ndarray | pd.Series) -> dict[str, float]:
    """Median and 10th-90th percentiles (as docs/reference-figures.md reports them)."""
    v = np.asarray(values, dtype=float)
    return {
        "median": float(np.median(v)),
        "p10": float(np.percentile(v, 10)),
        "p90": float(np.percentile(v, 90)),
    }
