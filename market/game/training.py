"""Training Q-learners for the two-agent game: schemes, schedules, cycles, statistics.

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
  (measured to converge with a role-aware table and exploration decaying to
  0 over the whole run); the Seller moves first on even episodes of the run.

This module decides what runs (which side learns, which table the trainer
plays, exploration and learning rate per episode, where cycles begin and
end) and keeps the records; the episodes themselves, the Bellman updates
and the greedy test run in one compiled loop, :mod:`market.game.train_kernel`,
called on chunks of episodes with every seed's tables in one
``(n, 2, R, S, A)`` array. Seeds run in parallel over the cores.

Random numbers: seed index ``i`` of a run with ``config.seed = s`` draws from
its own generator, seeded by ``SeedSequence(s, spawn_key=(i,))``; the same
seed gives bit-identical tables whatever the number of seeds trained
together, of threads or of processes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from market.game import policies, train_kernel
from market.game.pressure import Pressure
from market.game.qtable import legal_rows, n_rows, round_rows
from market.game.rules import SELLER, SIDE_NAMES, Protocol
from market.game.train_config import (  # noqa: F401  (the trainer's names, from here too)
    EPSILON_CLOCKS,
    EXTENSIONS,
    PRESETS,
    SCHEDULES,
    SCHEMES,
    TEST_LOOPS,
    TRAIN_CHOICES,
    TrainConfig,
    preset,
)
from market.game.train_kernel import COUNT_COLUMNS
from market.limits import check_table_cells

#: episodes (summed over seeds) per call of the kernel: progress is reported per call
CHUNK_EPISODES = 500_000
#: and at most this many per seed: the per-episode schedule arrays of a call then stay small
#: enough for the processor's cache (computing 150,000 at once cost more than training one seed)
CHUNK_PER_SEED = 32_768

#: what :func:`train` says before compiling the kernel (numba's cache is cold)
COMPILING = "compiling the training kernel (kept for later runs; about 10 seconds)"


def table_cells(config: TrainConfig) -> int:
    """Q-table cells a training run holds: live tables and the frozen scheme's snapshots, both
    sides, every seed (what :func:`check_size` bounds)."""
    pr = config.protocol
    roles = 2 if config.role_aware else 1
    return 3 * 2 * roles * n_rows(pr) * pr.n_actions * config.seeds


def check_size(config: TrainConfig, advice: str) -> None:
    """Refuse, before allocating, a training run whose tables would not fit (every caller that
    trains: the train command, the tournament's self-play entrant). ``advice`` says what to
    lower, in the caller's words."""
    check_table_cells(table_cells(config), f"training {config.seeds} seed(s) at "
                      f"P={config.prices}, T={config.rounds}", advice)


# --- schedules ------------------------------------------------------------------------------
def exploration(config: TrainConfig, episode_in_cycle: Any, episode_in_run: Any) -> Any:
    """Exploration rate of a learner in the given episode(s): a float, or an array for arrays."""
    e = np.asarray(episode_in_cycle if config.epsilon_clock == "cycle" else episode_in_run,
                   dtype=float)
    start, end = config.epsilon_start, config.epsilon_end
    if config.epsilon_schedule == "exp":
        out = end + (start - end) * np.exp(-config.epsilon_decay * e)
    else:
        span = config.epsilon_decay * (
            config.episodes if config.epsilon_clock == "cycle" else config.total_episodes
        )
        frac = np.minimum(1.0, e / max(span - 1.0, 1.0))
        out = start + (end - start) * frac
    return float(out) if out.ndim == 0 else out


def learning_rate(config: TrainConfig, episode_in_run: Any) -> Any:
    """Learning rate in the given episode(s) (constant, or linear to ``lr_end``)."""
    g = np.asarray(episode_in_run, dtype=float)
    if config.lr_end is None or config.total_episodes <= 1:
        out = np.full(g.shape, config.lr)
    else:
        out = config.lr + (config.lr_end - config.lr) * (g / (config.total_episodes - 1))
    return float(out) if out.ndim == 0 else out


def schedules(config: TrainConfig, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Exploration and learning rate of the run's episodes ``start .. stop-1``, as arrays."""
    g = np.arange(start, stop, dtype=np.float64)  # exact: episode counts are far below 2**53
    eps = exploration(config, g % config.episodes, g)
    return (np.atleast_1d(np.asarray(eps, dtype=np.float64)),
            np.atleast_1d(np.asarray(learning_rate(config, g), dtype=np.float64)))


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


def original_loop_policies(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol
) -> tuple[np.ndarray, np.ndarray]:
    """The greedy policies ``(2, S, A)`` the original test loop plays with these tables.

    The first mover's observation is never updated, so at each of its moves
    it plays its start row (offers only, ties uniform); its rows of rounds
    ``0 .. T-2`` (the ones it would see) are replaced by the start row's
    policy. The second mover plays as the protocol says. For the exact
    expectation of ``test_loop="original"`` (:func:`market.game.evaluation.exact_test`
    with ``policies=True``).
    """

    out = []
    for tables in (seller, buyer):
        pol = policies.greedy_policy(tables, protocol).copy()
        for t in range(protocol.rounds - 1):
            pol[0, round_rows(protocol, t)] = pol[0, 0]
        out.append(pol)
    return out[0], out[1]


def _nash_conv_all(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol) -> np.ndarray:
    from market.game import evaluation

    return np.asarray(evaluation.nash_conv(seller, buyer, protocol), dtype=float)


def _exact(seller: np.ndarray, buyer: np.ndarray, config: TrainConfig) -> pd.DataFrame:
    """Exact expectation of each seed's greedy test (under the configured test loop)."""
    from market.game import evaluation

    protocol, rows = config.protocol, []
    for s, b in zip(seller, buyer, strict=True):
        if config.test_loop == "original":
            s, b = original_loop_policies(s, b, protocol)
        rows.append(evaluation.exact_test(s, b, protocol, episodes=config.test_episodes,
                                          policies=config.test_loop == "original"))
    return pd.DataFrame(rows).add_prefix("exact_")


def _say_compiling() -> None:
    print(COMPILING, file=sys.stderr, flush=True)


def train(
    config: TrainConfig,
    start: Any | None = None,
    *,
    nash_conv: bool = True,
    exact: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_cycle: Callable[[int, int, np.ndarray, list[np.ndarray]], None] | None = None,
    status: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train ``config.seeds`` independent seeds together, then test them.

    ``start``: a :class:`~market.game.table_files.TablePair` to start from (copied to
    every seed). ``nash_conv``: compute NashConv per cycle and at the end
    (exact, by :mod:`market.game.evaluation`). ``exact``: also the exact expected
    test figures. ``progress(done, total)`` is called after every chunk of
    training episodes (``total = cycles * episodes``; the test is not
    counted). ``on_cycle(cycle, trainee, trainer_table, live)`` at the start
    of each cycle with the table the trainer will play (frozen scheme; the
    trainer's live table otherwise) and both live tables, for inspection.
    ``status(message)`` hears :data:`COMPILING` before a first-time compile
    and ``"greedy test"`` before the test (without it, the compile notice
    goes to stderr). Raises :class:`~market.errors.CompileError` if numba
    cannot compile the kernel on this machine.
    """
    train_kernel.ensure_compiled(_say_compiling if status is None else lambda: status(COMPILING))
    protocol = config.protocol
    n, E, C = config.seeds, config.episodes, config.cycles
    q = np.ascontiguousarray(np.stack(initial_tables(config, start), axis=1), dtype=np.float64)
    rng = train_kernel.seed_states(config.seed, n)
    counts = np.zeros((n, C, len(COUNT_COLUMNS)), dtype=np.int64)
    roles = _Roles(config, q)
    trainees: list[str] = []
    nc_hist = np.full((C, n), np.nan)
    per_cycle = roles.frozen or nash_conv or on_cycle is not None
    chunk = max(1, min(CHUNK_EPISODES // n, CHUNK_PER_SEED))  # episodes per seed per call
    total = C * E
    eval_seconds = 0.0
    t0 = time.perf_counter()
    g = 0
    while g < total:
        cycle, e = divmod(g, E)
        if e == 0 and per_cycle:  # a cycle begins
            if on_cycle is not None:
                live = [q[:, 0].copy(), q[:, 1].copy()]
                on_cycle(cycle, roles.trainee,
                         roles.trainer_snap if roles.frozen else live[roles.trainer], live)
            roles.begin_cycle(q)
        stop = min(total, g + chunk, (cycle + 1) * E if per_cycle else total)
        eps, lr = schedules(config, g, stop)
        first0, learns = roles.movers(g, e)
        train_kernel.play(q, rng, counts, eps, lr, first0, learns, config.gamma, e0=g, per_cycle=E,
                    bonus=config.deal_bonus, pressure=_pressure(config),
                    starts=config.explore_starts)
        g = stop
        if progress is not None:
            progress(g, total)
        if per_cycle and g % E == 0:  # the cycle ends
            trainees.append(SIDE_NAMES[roles.trainee] if roles.frozen else config.train)
            roles.end_cycle(q, cycle)
            if nash_conv:
                t_eval = time.perf_counter()
                nc_hist[cycle] = _nash_conv_all(q[:, 0], q[:, 1], protocol)
                eval_seconds += time.perf_counter() - t_eval
    seconds = time.perf_counter() - t0 - eval_seconds  # training only, not NashConv
    if not per_cycle:
        trainees = [config.train] * C
    seller, buyer = q[:, 0].copy(), q[:, 1].copy()
    if status is not None:
        status("greedy test")
    test = _greedy_test(q, rng, config, nash_conv, exact)
    hist = _history(counts, trainees, nc_hist if nash_conv else None, config)
    return TrainResult(config, seller, buyer, hist, test, seconds, roles.versions)


class _Roles:
    """Who learns and who moves first, cycle by cycle; in the frozen scheme, the document's
    snapshots: the trainer plays ``trainer_snap``, ``trainee_snap`` is the trainee's table
    before the current cycle, and the roles swap at each cycle's end when both train."""

    def __init__(self, config: TrainConfig, q: np.ndarray) -> None:
        self.config = config
        self.learners = {"both": (SELLER, 1 - SELLER), "seller": (SELLER,),
                         "buyer": (1 - SELLER,)}[config.train]
        self.frozen = config.scheme == "frozen"
        self.trainee = (self.learners[0] if config.train != "both"
                        else SIDE_NAMES.index(config.first))
        self.trainer = 1 - self.trainee
        self.trainee_snap, self.trainer_snap = q[:, self.trainee].copy(), q[:, self.trainer].copy()
        self.trainee_ver, self.trainer_ver = 0, 0  # cycle at whose start each was taken
        self.versions: list[int] = []
        self.trainer_live = self.trainer_snap

    def begin_cycle(self, q: np.ndarray) -> None:
        if self.frozen:
            self.versions.append(self.trainer_ver)
            self.trainer_live = q[:, self.trainer].copy()
            q[:, self.trainer] = self.trainer_snap  # the trainer plays its frozen snapshot

    def movers(self, g: int, e: int) -> tuple[int, tuple[bool, bool]]:
        """The first mover of episode ``g`` (``e`` within its cycle) and who learns."""
        if self.frozen:
            first0 = self.trainer if e % 2 == 0 else self.trainee
            return first0, (self.trainee == 0, self.trainee == 1)
        first0 = SELLER if g % 2 == 0 else 1 - SELLER
        return first0, (0 in self.learners, 1 in self.learners)

    def end_cycle(self, q: np.ndarray, cycle: int) -> None:
        if not self.frozen:
            return
        q[:, self.trainer] = self.trainer_live
        if self.config.train == "both":
            # The document's swap: the old trainer's live table becomes the new trainee's
            # "before" snapshot; the old trainee's "before" snapshot becomes the new trainer.
            new_trainee_snap = q[:, self.trainer].copy()
            self.trainer_snap, self.trainee_snap = self.trainee_snap, new_trainee_snap
            self.trainer_ver, self.trainee_ver = self.trainee_ver, cycle + 1
            self.trainee, self.trainer = self.trainer, self.trainee


def _greedy_test(q: np.ndarray, rng: np.ndarray, config: TrainConfig, nash_conv: bool,
                 exact: bool) -> pd.DataFrame:
    """The greedy test's counts per seed, with the exact expectation and NashConv."""
    n = config.seeds
    seller, buyer = q[:, 0].copy(), q[:, 1].copy()
    tested = np.zeros((n, 1, len(COUNT_COLUMNS)), dtype=np.int64)
    if config.test_episodes > 0:
        zeros = np.zeros(config.test_episodes)
        train_kernel.play(q, rng, tested, zeros, zeros, SELLER, (False, False), config.gamma,
                    stale_first=config.test_loop == "original", pressure=_pressure(config))
    test = pd.DataFrame(tested[:, 0], columns=list(COUNT_COLUMNS))[_columns(config)]
    test.insert(0, "seed", np.arange(n))
    if exact and config.test_episodes > 0:
        test = pd.concat([test, _exact(seller, buyer, config)], axis=1)
    if nash_conv:
        test["nash_conv"] = _nash_conv_all(seller, buyer, config.protocol)
    return test


def _pressure(config: TrainConfig) -> Pressure:
    """The game's time pressure as the kernel takes it."""
    return Pressure.of(config)


def _columns(config: TrainConfig) -> list[str]:
    """The counts' columns a run reports: breakdowns only in a game that has them (so the
    document's game reports what it always did)."""
    return [c for c in COUNT_COLUMNS if c != "breakdowns" or config.protocol.risky]


def _history(counts: np.ndarray, trainees: list[str], nc_hist: np.ndarray | None,
             config: TrainConfig) -> pd.DataFrame:
    """One row per seed and cycle: the cycle's counts, its trainee, its NashConv."""
    n, C = counts.shape[0], counts.shape[1]
    hist = pd.DataFrame(counts.transpose(1, 0, 2).reshape(C * n, len(COUNT_COLUMNS)),
                        columns=list(COUNT_COLUMNS))[_columns(config)]
    hist.insert(0, "seed", np.tile(np.arange(n), C))
    hist.insert(1, "cycle", np.repeat(np.arange(C), n))
    hist.insert(2, "trainee", np.repeat(np.asarray(trainees, dtype=object), n))
    if nc_hist is not None:
        hist["nash_conv"] = nc_hist.reshape(-1)
    return hist


def summarize(values: np.ndarray | pd.Series) -> dict[str, float]:
    """Median and 10th-90th percentiles (as docs/pages/reference-figures.md reports them)."""
    v = np.asarray(values, dtype=float)
    return {
        "median": float(np.median(v)),
        "p10": float(np.percentile(v, 10)),
        "p90": float(np.percentile(v, 90)),
    }
