"""Many negotiations as one Gymnasium vector environment, for deep RL at compiled speed.


| Import             | ``from market.interop.vector_env import BargainingVectorEnv``          |
|--------------------|------------------------------------------------------------------------|
| Actions            | Discrete, one per row                                                  |
| Agents             | ``num_envs`` rows of one side, against one compiled strategy           |
| Action Space       | ``MultiDiscrete([7 7 7 7])`` (4 rows, P = 5)                           |
| Observation Space  | ``Box(0, [[5 5 5 1] ...], (4, 4), int64)`` (4 rows, P = T = 5)         |
| Single spaces      | those of ``negotiation_market/Bargaining-v0``                          |
| Autoreset          | ``NEXT_STEP`` (Gymnasium 1.x)                                          |

**Rewards**: as the single environment's, per row, at each row's end.

**Arguments**: ``num_envs=1024``, ``side="seller"``, ``opponent="averaging"``
(a strategy with a compiled decision), ``prices=5``, ``rounds=5`` or
``protocol=`` (a :class:`~market.game.rules.Protocol`), and ``first``, the
ranges, ``reward`` and the time-pressure keywords as the PettingZoo
environment (:mod:`market.interop.pettingzoo_env`, which lists them).

**Version history**: v0, the first release (the risk that the talks end and
the costs were added later, off by default).


``BargainingVectorEnv(num_envs, side, opponent, ...)`` holds ``num_envs``
negotiations against one opponent strategy as rows of one batch, advanced
together by :func:`market.game.fastgame.step` (compiled with the opponent's
rule): the opponent's moves are its compiled decision (every built-in
strategy has one), so a step of a thousand rows costs about what one Python
call does. Spaces, observations, rewards and the legal-action mask are those
of the single environment
(:mod:`market.interop.gymnasium_env`), batched; episodes reset themselves
by Gymnasium 1.x's next-step rule (``autoreset_mode`` ``NEXT_STEP``: the
step after a row's last one starts its next negotiation and ignores that
row's action). ``infos`` carry ``action_mask`` (rows x actions),
``illegal_action`` and, for rows that ended, ``deal_level``; and
``action_masks()`` gives the current masks (the sb3-contrib convention).

Randomness (a random first mover, a stochastic opponent) comes from one
generator seeded by ``reset(seed=...)``: the same seed and ``num_envs``
give the same episodes. Opponents without a compiled decision (``negmas:``,
``genius:``, a class of your own) are refused here: the single
environment plays them.

    from market.interop.vector_env import BargainingVectorEnv

    envs = BargainingVectorEnv(1024, side="seller", opponent="boulware")
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode
    from gymnasium.vector.utils import batch_space
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError('market.interop.vector_env needs Gymnasium: pip install -e ".[rl]"') \
        from exc

from market.compiled import jit
from market.compiled_game import compiled_module
from market.errors import UsageError
from market.game import buffers, policies
from market.game.moves import OPEN_RANDOM
from market.game.rules import SIDE_NAMES, Protocol
from market.interop.episode import Settings, check_seed, pressure_keywords, settings_for
from market.limits import check_memory
from strategies import compiled, specs
from strategies.base import Strategy
from strategies.stores import stores

#: sub-environments at most (memory: a few hundred bytes each)
NUM_ENVS_MAX = 10_000_000


#: a row's state, its outputs and a step's temporaries: about 130 bytes plus its action
#: mask (one byte per action), doubled for the copies a step hands back
ROW_BYTES, ROW_BYTES_PER_ACTION = 400, 2


class Rows:
    """The state of ``n`` negotiations against one compiled opponent, and one step of them.

    Shared by the vector environment and the single one's fast path.
    """

    def __init__(self, n: int, settings: Settings, side: int, opponent: Strategy) -> None:
        if not compiled.has_form(opponent):
            raise UsageError(f"opponent {opponent.name or type(opponent).__name__!r} has no "
                             "compiled decision; the single environment plays it")
        self.module = compiled_module([opponent], calls=lambda module: {})  # step: on use
        self.kind = compiled.kind_in(self.module, opponent)
        self.n, self.settings, self.side = n, settings, side
        self.protocol = p = settings.protocol
        self.store, _ = stores([opponent.kernel_state()])
        self.first = np.zeros(n, dtype=np.int64)
        self.move = np.zeros(n, dtype=np.int64)
        self.last = np.zeros((2, n), dtype=np.int64)
        self.prev = np.zeros((2, n), dtype=np.int64)
        self.level = np.zeros(n, dtype=np.int64)
        self.done = np.ones(n, dtype=np.bool_)
        lo, hi = settings.range_of(1 - side)
        self.lo, self.hi = np.full(n, lo, dtype=np.int64), np.full(n, hi, dtype=np.int64)
        self.member = np.zeros(n, dtype=np.int64)
        self.time_left = np.full(n, -1, dtype=np.int64)
        self.loyal = np.zeros(n, dtype=np.int64)  # no market clock, no partner choice here
        self.book = buffers.no_book()  # nor a book
        self.open_mode = (OPEN_RANDOM if settings.first == "random"
                          else SIDE_NAMES.index(settings.first))
        self.reward_mode = 0 if settings.reward == "two-agent" else 1
        self.floor, self.ceiling = settings.seller_range[0], settings.buyer_range[1]
        self.obs = np.zeros((n, 4), dtype=np.int64)
        self.mask = np.zeros((n, p.n_actions), dtype=np.int8)
        self.reward = np.zeros(n)
        self.ended = np.zeros(n, dtype=np.bool_)
        self.illegal = np.zeros(n, dtype=np.bool_)
        self._draws = jit.Handles()  # the generator as the compiled step takes it

    def step(self, actions: np.ndarray, rng: np.random.Generator, autoreset: bool) -> None:
        """Advance every row (``actions[i] < 0``: start row ``i`` anew)."""
        P, T = self.protocol.prices, self.protocol.rounds
        env = (self.side, P, T, self.open_mode, self.reward_mode, self.floor, self.ceiling,
               self.protocol.pressure)
        bad = self.module.step(
            env, actions, autoreset,
            (self.first, self.move, self.last, self.prev, self.level, self.done),
            (self.lo, self.hi, self.member, self.time_left, self.loyal, self.book), self.kind,
            self.store.arrays,
            self._draws(rng),
            (self.obs, self.mask, self.reward, self.ended, self.illegal))
        if bad >= 0:
            raise RuntimeError(f"the opponent played an illegal action at move {bad}")


def actions_of(actions: Any, n: int, n_actions: int) -> np.ndarray:
    """``n`` actions of the space as an int64 array; ``ValueError`` naming the rule otherwise."""
    a = np.asarray(actions)
    if a.shape != (n,) or a.dtype.kind not in "iu":
        got = f"shape {a.shape}" if a.shape != (n,) else f"dtype {a.dtype}"
        raise ValueError(f"actions must be {n} integers in [0, {n_actions - 1}] (got {got})")
    if n and (a.min() < 0 or a.max() >= n_actions):
        raise ValueError(f"actions must be {n} integers in [0, {n_actions - 1}] "
                         f"(got {int(a.min())}..{int(a.max())})")
    return a.astype(np.int64, copy=False)


class BargainingVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` negotiations of one side against a compiled opponent (module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    @pressure_keywords
    def __init__(
        self,
        num_envs: int = 1024,
        side: str = "seller",
        opponent: str | Strategy = "averaging",
        prices: int | None = None,
        rounds: int | None = None,
        *,
        protocol: Protocol | None = None,
        first: str = "random",
        seller_range: tuple[int, int] | None = None,
        buyer_range: tuple[int, int] | None = None,
        reward: str = "two-agent",
        **pressure: float | None,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or not (
                1 <= num_envs <= NUM_ENVS_MAX):
            raise UsageError(f"num_envs must be an integer in [1, {NUM_ENVS_MAX:,}] "
                             f"(got {num_envs!r})")
        if side not in SIDE_NAMES:
            raise UsageError(f"side must be 'seller' or 'buyer' (got {side!r})")
        self.settings = settings_for(
            protocol, prices, rounds, seller_range, buyer_range, first, reward, **pressure)
        self.side = SIDE_NAMES.index(side)
        protocol = self.settings.protocol
        opp = (specs.build(opponent, 1 - self.side, protocol, option="opponent")
               if isinstance(opponent, str) else opponent)
        self.opponent = opp
        self.num_envs = int(num_envs)
        check_memory(self.num_envs * ROW_BYTES_PER_ACTION * protocol.n_actions
                     + self.num_envs * ROW_BYTES, f"{self.num_envs:,} rows at P={protocol.prices}",
                     "lower num_envs or prices")  # up front, not a MemoryError mid-way
        self.rows = Rows(self.num_envs, self.settings, self.side, opp)
        self.single_observation_space = spaces.Box(0, self.settings.observation_high(),
                                                   shape=(4,), dtype=np.int64)
        self.single_action_space = spaces.Discrete(protocol.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rng = np.random.default_rng()
        self._started = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        seed = check_seed(seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            self.action_space.seed(seed)
        self.rows.done[:] = True
        self.rows.step(np.full(self.num_envs, -1, dtype=np.int64), self._rng, autoreset=True)
        self._started = True
        return self.rows.obs.copy(), self._infos()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        if not self._started:
            raise RuntimeError("step() before reset(): call reset() first")
        a = actions_of(actions, self.num_envs, self.settings.protocol.n_actions)
        self.rows.step(a, self._rng, autoreset=True)
        r = self.rows
        return (r.obs.copy(), r.reward.copy(), r.ended.copy(),
                np.zeros(self.num_envs, dtype=np.bool_), self._infos())

    def opponent_policy(self) -> np.ndarray:
        """The opponent's ``(2, S, A)`` policy for :mod:`market.game.evaluation` (refused,
        saying why, for opponents whose moves depend on more than what they observe)."""

        lo, hi = self.settings.range_of(1 - self.side)
        return policies.policy_of(self.opponent, self.settings.protocol, lo, hi)

    def action_masks(self) -> np.ndarray:
        """The legal actions of every row now, ``(num_envs, actions)`` booleans."""
        return self.rows.mask.astype(bool)

    def _infos(self) -> dict[str, Any]:
        r = self.rows
        return {"action_mask": r.mask.copy(), "illegal_action": r.illegal.copy(),
                "_illegal_action": r.illegal.copy(),
                "deal_level": np.where(r.ended, r.level, 0), "_deal_level": r.ended.copy()}


__all__ = ["BargainingVectorEnv", "NUM_ENVS_MAX", "Rows", "actions_of"]
