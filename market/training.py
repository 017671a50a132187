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
  (what DESIGN.md measured to converge with a role-aware table and
  exploration decaying to 0 over the whole run).

Seeds run in lockstep: tables are ``(n_seeds, R, S, A)`` arrays and every
episode advances all seeds together, so one Python-level episode costs the
same for 1 or 1,000 seeds. The first mover of an episode is the same for all
seeds (it only depends on the episode index), which keeps each move a single
batch of array operations. Within one episode a side never visits a row
twice, so applying the Bellman updates after the episode (a replay of its
moves, in order) equals updating online.

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

from market.protocol import BUYER, SELLER, SIDE_NAMES, Protocol
from strategies.qlearning import bellman_update, legal_rows

TRAIN_CHOICES = ("both", "seller", "buyer")
SCHEMES = ("frozen", "simultaneous")
SCHEDULES = ("exp", "linear")


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (and nothing that does not).

    ``epsilon_schedule``: ``exp`` is the document's
    ``end + (start - end) * exp(-decay * e)``; ``linear`` goes from ``start``
    to ``end`` over the first ``epsilon_decay`` fraction of the run and stays
    there. ``epsilon_clock``: ``cycle`` counts ``e`` from 0 in every cycle
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
#: self-play converges (role-aware tables, both sides learning at once,
#: exploration and learning rate decaying to 0); see DESIGN.md's measurements.
PRESETS: dict[str, TrainConfig] = {
    "seed": TrainConfig(),
    "default": TrainConfig(
        cycles=40,
        episodes=1000,
        scheme="simultaneous",
        role_aware=True,
        lr=0.2,
        lr_end=0.02,
        gamma=1.0,
        epsilon_start=1.0,
        epsilon_end=0.0,
        epsilon_decay=0.8,
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
    frac = min(1.0, e / span) if span > 0 else 1.0
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

    first: int
    actions: np.ndarray
    n_moves: np.ndarray
    level: np.ndarray

    def rewards(self, side: int, prices: int) -> np.ndarray:
        """The document's rewards: Seller ``p / P``, Buyer ``1 - p / P`` at a deal, else 0."""
        deal = self.level > 0
        if side == SELLER:
            return np.where(deal, self.level / prices, 0.0)
        return np.where(deal, 1.0 - self.level / prices, 0.0)

    def ender(self) -> np.ndarray:
        """Side that made the last move (accepted or rejected)."""
        last_even = (self.n_moves - 1) % 2 == 0
        return np.where(last_even, self.first, 1 - self.first)


def _role(table: np.ndarray, side: int, first: int) -> int:
    """Role index of ``side`` in a table: 0 if it moved first (or one role only), else 1."""
    return 0 if table.shape[1] == 1 or side == first else 1


def choose(
    q: np.ndarray, legal: slice, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """Epsilon-greedy choice per row of ``q`` (n, A) among the actions in ``legal``.

    The same distribution as :func:`strategies.qlearning.epsilon_greedy`
    (greedy with uniform ties; with probability ``epsilon`` a uniform legal
    action) with fewer array passes: the legal actions of a move always form
    one contiguous block of columns (offers only at the start, accept/reject
    only in the last round, everything otherwise), so a slice replaces the
    mask, and ties are broken by the largest of uniform keys.
    """
    lo = legal.start or 0
    qs = q[:, legal]
    best = qs >= qs.max(axis=1, keepdims=True)
    keys = rng.random(qs.shape, dtype=np.float32)
    keys += best  # maxima's keys move to [1, 2), above every other key
    a = keys.argmax(axis=1)
    if epsilon > 0.0:
        explore = rng.random(q.shape[0]) < epsilon
        k = int(explore.sum())
        if k:
            a[explore] = rng.integers(0, qs.shape[1], size=k)
    return a + lo if lo else a


def legal_block(protocol: Protocol, move: int) -> slice:
    """The legal actions at ``move`` as a slice of columns (see :meth:`Protocol.legal`)."""
    idx = np.flatnonzero(protocol.legal(move))
    return slice(int(idx[0]), int(idx[-1]) + 1)


@functools.lru_cache(maxsize=64)
def _blocks(protocol: Protocol) -> tuple[slice, ...]:
    return tuple(legal_block(protocol, m) for m in range(protocol.max_moves))


def play(
    tables: tuple[np.ndarray, np.ndarray],
    first: int,
    epsilon: tuple[float, float],
    protocol: Protocol,
    rng: np.random.Generator,
) -> Episodes:
    """Play one episode for every seed in lockstep.

    ``tables[side]`` is ``(n, R, S, A)``; each side acts epsilon-greedily with
    ``epsilon[side]`` (0: greedy) among the legal actions, ties uniform.
    """
    P, T = protocol.prices, protocol.rounds
    n = tables[0].shape[0]
    actions = np.full((n, 2 * T), -1, dtype=np.int64)
    n_moves = np.zeros(n, dtype=np.int64)
    level = np.zeros(n, dtype=np.int64)
    ai = np.arange(n)  # seeds still negotiating
    state = np.zeros(n, dtype=np.int64)
    S, A = protocol.n_states, protocol.n_actions
    # Rows of each side's tables as one (n * R * S, A) matrix: np.take on it is far
    # faster than mixed fancy indexing of the 4-d array.
    flat = [t.reshape(-1, A) for t in tables]
    base = [(np.arange(n) * t.shape[1] + _role(t, side, first)) * S
            for side, t in enumerate(tables)]
    blocks = _blocks(protocol)
    for m in range(2 * T):
        side = first if m % 2 == 0 else 1 - first
        q = np.take(flat[side], base[side][ai] + state, axis=0)
        a = choose(q, blocks[m], epsilon[side], rng)
        actions[ai, m] = a
        n_moves[ai] = m + 1
        cont = a < P
        if not cont.all():
            acc = a == P
            if acc.any():
                level[ai[acc]] = actions[ai[acc], m - 1] + 1
            ai, a = ai[cont], a[cont]
            if ai.size == 0:
                break
        state = 1 + (m // 2) * P + a  # the offer just made, seen by the next mover
    return Episodes(first, actions, n_moves, level)


def learn(
    table: np.ndarray,
    side: int,
    ep: Episodes,
    reward: np.ndarray,
    lr: float,
    gamma: float,
    legal: np.ndarray,
) -> None:
    """Bellman-update ``table`` (n, R, S, A) in place from ``side``'s moves in ``ep``.

    Each move's target is the reward if the negotiation ended before this
    side's next move, else ``gamma`` times the value (max over legal actions)
    of the row it observed next, exactly the document's update. A side never
    visits a row twice in one negotiation and each update reads only the row
    it leads to, which online learning has not touched yet in this episode;
    so all of an episode's updates can be applied in one vectorised step and
    equal the document's one-by-one updates.
    """
    P = legal.shape[1] - 2
    two_t = ep.actions.shape[1]
    d = legal.shape[0] - 1
    role = _role(table, side, ep.first)
    ms = np.arange(0 if side == ep.first else 1, two_t, 2)  # this side's moves
    seed, k = np.nonzero(ms[None, :] < ep.n_moves[:, None])
    m = ms[k]
    prev = ep.actions[seed, np.maximum(m - 1, 0)]
    s = np.where(m == 0, 0, 1 + ((m - 1) // 2) * P + prev)
    a = ep.actions[seed, m]
    cont = m + 2 < ep.n_moves[seed]
    seen = ep.actions[seed, np.minimum(m + 1, two_t - 1)]  # opponent's reply (an offer if cont)
    s_next = np.where(cont, 1 + ((m + 1) // 2) * P + seen, d)
    if not table.flags.c_contiguous:
        raise ValueError("learn() updates tables in place: they must be C-contiguous")
    R, S, A = table.shape[1:]
    rows = table.reshape(-1, A)  # a view: updates land in ``table``
    row_base = (seed * R + role) * S
    nq = np.where(legal[s_next], np.take(rows, row_base + s_next, axis=0), -np.inf).max(axis=-1)
    target_v = np.where(cont, nq, 0.0)
    r = np.where(cont, 0.0, reward[seed])
    cell = (row_base + s) * A + a
    flat = table.reshape(-1)
    flat[cell] = bellman_update(flat[cell], r, target_v, lr, gamma)


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


def _counts(ep: Episodes, prices: int) -> dict[str, np.ndarray]:
    deal = ep.level > 0
    ender = ep.ender()
    return {
        "seller_validated": (deal & (ender == SELLER)).astype(np.int64),
        "seller_rejected": (~deal & (ender == SELLER)).astype(np.int64),
        "buyer_validated": (deal & (ender == BUYER)).astype(np.int64),
        "buyer_rejected": (~deal & (ender == BUYER)).astype(np.int64),
        "seller_wallet": ep.level,
        "buyer_wallet": np.where(deal, prices - ep.level, 0),
        "deals": deal.astype(np.int64),
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
    n = seller.shape[0]
    tot = {k: np.zeros(n, dtype=np.int64) for k in COUNT_COLUMNS}
    for e in range(episodes):
        first = SELLER if e % 2 == 0 else BUYER
        ep = play((seller, buyer), first, (0.0, 0.0), protocol, rng)
        for k, v in _counts(ep, protocol.prices).items():
            tot[k] += v
    return tot


def _nash_conv_all(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol) -> np.ndarray:
    from market import evaluation

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

    ``start``: a :class:`~market.tables.TablePair` to start from (copied to
    every seed). ``nash_conv``: compute NashConv per cycle and at the end
    (exact, by :mod:`market.evaluation`). ``exact``: also the exact expected
    test figures. ``progress(done, total)`` is called after every episode
    batch; ``on_cycle(cycle, trainee, trainer_table, live)`` at the start of
    each cycle with the table the trainer will play (frozen scheme; the
    trainer's live table otherwise) and both live tables, for inspection.
    """
    protocol = config.protocol
    rng = np.random.default_rng(config.seed)
    seller, buyer = initial_tables(config, start)
    live = [seller, buyer]
    legal = legal_rows(protocol)
    learners = {"both": (SELLER, BUYER), "seller": (SELLER,), "buyer": (BUYER,)}[config.train]
    trainee = SELLER if config.train == "both" and config.first == "seller" else (
        BUYER if config.train == "both" else learners[0]
    )
    trainer = 1 - trainee
    # Frozen scheme, the document's variables: the trainer plays ``trainer_snap``;
    # ``trainee_snap`` is the trainee's table before the current cycle.
    trainee_snap, trainer_snap = live[trainee].copy(), live[trainer].copy()
    trainee_ver, trainer_ver = 0, 0  # cycle at whose start each snapshot was taken
    versions: list[int] = []
    history: list[pd.DataFrame] = []
    n = config.seeds
    total = config.total_episodes + config.test_episodes
    done = 0
    t0 = time.perf_counter()
    for cycle in range(config.cycles):
        acc = {k: np.zeros(n, dtype=np.int64) for k in COUNT_COLUMNS}
        if config.scheme == "frozen":
            versions.append(trainer_ver)
            if on_cycle is not None:
                on_cycle(cycle, trainee, trainer_snap, live)
        elif on_cycle is not None:
            on_cycle(cycle, trainee, live[trainer], live)
        for e in range(config.episodes):
            g = cycle * config.episodes + e
            eps = exploration(config, e, g)
            lr = learning_rate(config, g)
            if config.scheme == "frozen":
                first = trainer if e % 2 == 0 else trainee
                acting = [live[0], live[1]]
                acting[trainer] = trainer_snap
                epsilon = [0.0, 0.0]
                epsilon[trainee] = eps
                ep = play((acting[0], acting[1]), first, (epsilon[0], epsilon[1]), protocol, rng)
                learn(live[trainee], trainee, ep, ep.rewards(trainee, protocol.prices), lr,
                      config.gamma, legal)
            else:
                first = SELLER if g % 2 == 0 else BUYER
                epsilon = [eps if s in learners else 0.0 for s in (SELLER, BUYER)]
                ep = play((live[0], live[1]), first, (epsilon[0], epsilon[1]), protocol, rng)
                for s in learners:
                    learn(live[s], s, ep, ep.rewards(s, protocol.prices), lr, config.gamma, legal)
            for k, v in _counts(ep, protocol.prices).items():
                acc[k] += v
        done += config.episodes
        if progress is not None:
            progress(done, total)
        frame = pd.DataFrame(acc)
        frame.insert(0, "seed", np.arange(n))
        frame.insert(1, "cycle", cycle)
        frame.insert(
            2, "trainee", SIDE_NAMES[trainee] if config.scheme == "frozen" else config.train
        )
        if nash_conv:
            frame["nash_conv"] = _nash_conv_all(live[0], live[1], protocol)
        history.append(frame)
        if config.scheme == "frozen" and config.train == "both":
            # The document's swap: the old trainer's live table becomes the new trainee's
            # "before" snapshot; the old trainee's "before" snapshot becomes the new trainer.
            new_trainee_snap = live[trainer].copy()
            trainer_snap, trainee_snap = trainee_snap, new_trainee_snap
            trainer_ver, trainee_ver = trainee_ver, cycle + 1
            trainee, trainer = trainer, trainee
    seconds = time.perf_counter() - t0
    tot = test_tables(live[0], live[1], protocol, config.test_episodes, rng)
    if progress is not None:
        progress(total, total)
    test = pd.DataFrame(tot)
    test.insert(0, "seed", np.arange(n))
    if exact and config.test_episodes > 0:
        from market import evaluation

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
    """Median and 10th-90th percentiles (what DESIGN.md's reference table reports)."""
    v = np.asarray(values, dtype=float)
    return {
        "median": float(np.median(v)),
        "p10": float(np.percentile(v, 10)),
        "p90": float(np.percentile(v, 90)),
    }
