"""What defines a training run: :class:`TrainConfig`, each field declared once, and the presets.

Each field is a declared parameter (:func:`market.parameters.declare`): its
range or choices, help and command-line flag; the check of a config and the
``train`` command's flags come from those declarations. This module holds
data only (no numpy, no numba), so the command line builds its flags
without loading the trainer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from market.game import pressure
from market.limits import PRICES_MAX, ROUNDS_MAX
from market.parameters import carries, check_value, declarations, declare

if TYPE_CHECKING:
    from market.game.rules import Protocol

TRAIN_CHOICES = ("both", "seller", "buyer")
SCHEMES = ("frozen", "simultaneous")
SCHEDULES = ("exp", "linear")
TEST_LOOPS = ("protocol", "original")
EPSILON_CLOCKS = ("cycle", "run")


#: measured here (2 cores), a ``train`` command's time: starting (imports, loading the
#: compiled kernel) about 0.8 s; a training or test episode's move about 8 ns plus 1.2 ns per
#: price level (the greedy choice scans its row) per seed, on one core (a single seed), half
#: that per seed when several share the two cores; each exact evaluation (NashConv after
#: every cycle and after the test, the test's expectation) about 0.5 ms plus 100 ns per table
#: cell, 250 ns where each seed's tables are small (under 1,000 cells: the per-seed work
#: weighs more). Fitted on eight runs from P = 2 with 10,000 seeds to P = 1,000: the
#: estimate was 0.7-1.6 times the measured time (`bench --only training` checks it)
SECONDS_TO_START = 0.8
SECONDS_PER_MOVE, SECONDS_PER_MOVE_AND_LEVEL = 8e-9, 1.2e-9
SECONDS_PER_EVALUATION = 5e-4
SECONDS_PER_EVALUATED_CELL, SECONDS_PER_SMALL_TABLE_CELL, SMALL_TABLE = 100e-9, 250e-9, 1000



@dataclass(frozen=True)
@carries(pressure.PRESSURE, after="deal_bonus")
class TrainConfig:
    """Everything that defines a training run (and nothing that does not).

    ``first``: the side trained in the first cycle when both sides train in
    turn (frozen scheme); not who moves first, which alternates every
    episode. ``epsilon_schedule``: ``exp`` is the document's
    ``end + (start - end) * exp(-decay * e)``; ``linear`` goes from ``start``
    to ``end`` over the first ``epsilon_decay`` fraction of the run (or cycle)
    and stays there. ``epsilon_clock``: ``cycle`` counts ``e`` from 0 in every cycle
    (the document), ``run`` over the whole run. ``lr_end``: if set, the
    learning rate falls linearly from ``lr`` to ``lr_end`` over the run.
    ``init``: initial value of every legal cell (optimism drives exploration).
    ``deal_bonus``: added to both learners' reward for a deal (0, the
    document's rewards, by default): a small one breaks the indifference of
    a responder offered its zero-surplus price toward accepting.
    The fields of :data:`market.game.pressure.PRESSURE` (after ``deal_bonus``, each made
    from its declaration): the game's time
    pressure (each side's discount factor and cost per offer, the risk that
    the talks end after a counter-offer); none, the document's game, by
    default.
    ``explore_starts``: the share of training episodes that start at a
    random move with a random offer on the table instead of the opening
    (0, the document's training, by default): the learners then train every
    subgame, which subgame perfection needs (:func:`market.game.episodes.run`).
    ``test_loop``: ``protocol`` plays the greedy test as the protocol says;
    ``original`` reproduces the original project's test loop, which never
    updates the first mover's observation (it offers its start-row offer at
    every move and never accepts).
    """

    prices: int = declare("int", 5, "price levels P (default 5)", lo=2, hi=PRICES_MAX,
                          flag="--prices", aliases=("-P",))
    rounds: int = declare("int", 5, "rounds T (default 5)", lo=1, hi=ROUNDS_MAX,
                          flag="--rounds", aliases=("-T",))
    cycles: int = declare("int", 50, "trainee/trainer swaps (>= 1; 0 only with --load: test "
                          "only)", lo=0, hi=10**6, flag="--cycles")
    episodes: int = declare("int", 100, "negotiations per cycle (>= 1)", lo=1, hi=10**7,
                            flag="--episodes")
    test_episodes: int = declare("int", 1000, "greedy test negotiations, first mover "
                                 "alternating", lo=0, hi=10**7, flag="--test-episodes")
    train: str = declare("choice", "both", "which side learns (default: both)",
                         choices=TRAIN_CHOICES, flag="--train")
    first: str = declare("choice", "seller", "side trained in the first cycle when both train "
                         "in turn (the seed preset's frozen scheme; default: seller). Not the "
                         "first mover: that alternates every episode", choices=TRAIN_CHOICES[1:],
                         flag="--trained-first")
    scheme: str = declare("choice", "frozen", "training scheme", choices=SCHEMES)
    role_aware: bool = declare("flag", False, "one table per role (first mover, responder)")
    lr: float = declare("float", 0.1, "learning rate", lo=0, hi=1)
    lr_end: float | None = declare("float", None, "learning rate at the end of the run "
                                   "(falling linearly from lr); none: constant", lo=0, hi=1,
                                   closed=True, optional=True)
    gamma: float = declare("float", 0.99, "discount of the Bellman update", lo=0, hi=1,
                           closed=True)
    epsilon_start: float = declare("float", 1.0, "exploration at the start", lo=0, hi=1,
                                   closed=True)
    epsilon_end: float = declare("float", 0.1, "exploration at the end", lo=0, hi=1,
                                 closed=True)
    epsilon_decay: float = declare("float", 0.001, "exploration's decay", lo=0, closed=True)
    epsilon_schedule: str = declare("choice", "exp", "exploration schedule", choices=SCHEDULES)
    epsilon_clock: str = declare("choice", "cycle", "what exploration's episode counts",
                                 choices=EPSILON_CLOCKS)
    init: float = declare("float", 0.0, "initial value of every legal cell", lo=-1e6, hi=1e6,
                          closed=True)
    deal_bonus: float = declare(
        "float", 0.0, "added to both learners' reward for a deal, in [0, 1] (default 0: the "
        "document's rewards); a small one breaks a responder's indifference at its "
        "zero-surplus price toward accepting", lo=0, hi=1, closed=True, flag="--deal-bonus",
        metavar="B", extension=True)
    explore_starts: float = declare(
        "float", 0.0, "share of training episodes, in [0, 1], that start at a random move "
        "with a random offer on the table and a random first action (default 0: the "
        "document's training); trains every subgame", lo=0, hi=1, closed=True,
        flag="--explore-starts", metavar="F", extension=True)
    seed: int = declare("int", 0, "random seed (>= 0)", lo=0, flag="--seed")
    seeds: int = declare("int", 1, "independent seeds trained together (medians reported)",
                         lo=1, hi=100_000, flag="--seeds")
    test_loop: str = declare(
        "choice", "protocol", "greedy test: 'protocol' (default) plays the rules as "
        "specified; 'original' reproduces the original project's test loop, which never "
        "updates the first mover's observation (it repeats its opening offer and never "
        "accepts)", choices=TEST_LOOPS, flag="--test-loop")

    def __post_init__(self) -> None:
        for d in declarations(type(self)):  # each value by its declaration (P, T and the
            check_value(d, getattr(self, d.name))  # discounts included: the game's ranges)

    @property
    def protocol(self) -> Protocol:
        from market.game.rules import Protocol  # the game's vocabulary, compiled: loaded late

        return Protocol(self.prices, self.rounds,
                        **{d.name: getattr(self, d.name) for d in pressure.PRESSURE})

    @property
    def total_episodes(self) -> int:
        return self.cycles * self.episodes

    def estimated_seconds(self) -> float:
        """The run's cost on this kind of machine, from the measured rates above: the
        episodes (training and test) and the exact evaluations (NashConv after every cycle
        and after the test, the test's exact expectation). ``bench --only training`` sets it
        beside measured runs."""
        P, T = self.prices, self.rounds
        moves = self.seeds * (self.total_episodes + self.test_episodes) * 2 * T
        play = moves * (SECONDS_PER_MOVE + SECONDS_PER_MOVE_AND_LEVEL * P)
        if self.seeds > 1:
            play /= 2  # the seeds share both cores
        per_seed = 2 * (2 if self.role_aware else 1) * (P * T + 2) * (P + 2)
        per_cell = (SECONDS_PER_SMALL_TABLE_CELL if per_seed < SMALL_TABLE
                    else SECONDS_PER_EVALUATED_CELL)
        evaluation = SECONDS_PER_EVALUATION + per_cell * per_seed * self.seeds
        return SECONDS_TO_START + play + (self.cycles + 2) * evaluation

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict; those that extend the document's game (a deal bonus, time
        costs) only where set, so that a run of the document's game records what it always
        did."""
        out = dataclasses.asdict(self)
        for name, default in EXTENSIONS.items():
            if out[name] == default:
                del out[name]
        return out


#: fields that extend the document's game, and their values that leave it as it is
EXTENSIONS = {d.name: d.default for d in declarations(TrainConfig) if d.extension}


#: ``seed``: the document's exact configuration. ``default``: tuned so that
#: self-play converges (docs/pages/reference-figures.md): role-aware tables,
#: both sides learning at once, 150,000 episodes, exploration falling linearly
#: from 1 to 0 over the run, learning rate from 0.2 to 0.02, no discount.
#: Measured: NashConv 0 on 19 of 20 seeds (seed 0) and 973 of 1,000, about
#: 0.03 s of training per seed.
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
#: ``perfect``: ``default`` made to look for the subgame-perfect equilibrium of a game with
#: time costs: every episode an exploring start (a random state and first action, so every
#: subgame is trained) and no other exploration (the moves after the start are greedy, so
#: every value is learned against the partner's greedy play, as backward induction has it:
#: measured, epsilon-greedy moves on top leave the values of rarely tried actions stale
#: from the partner's exploring days), a deal bonus of 0.001 (an indifferent responder
#: accepts, as ``evaluation.spe`` does) and ten times the episodes. Measured in the
#: report's time-costs section.
PRESETS["perfect"] = PRESETS["default"].replace(explore_starts=1.0, epsilon_start=0.0,
                                                epsilon_end=0.0, deal_bonus=0.001,
                                                cycles=1500)


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A preset with some fields replaced (``None`` values are ignored)."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)} (got {name!r})")
    return PRESETS[name].replace(**{k: v for k, v in overrides.items() if v is not None})


