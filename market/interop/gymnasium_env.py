"""One side of the game as a Gymnasium environment, the other side played by a strategy.


| Import             | ``gym.make("negotiation_market/Bargaining-v0")`` (after ``import market.interop.gymnasium_env``) |
|--------------------|------------------------------------------------------------------------|
| Actions            | Discrete                                                               |
| Agents             | 1 (``side``), against a strategy (``opponent``)                        |
| Action Values      | ``[0, P + 1]``: offer level ``a + 1``, ``P`` accept, ``P + 1`` reject  |
| Action Space       | ``Discrete(7)`` (P = 5)                                                |
| Observation Values | ``[0, max(P, T)]`` (last offer, round, own last offer, moved first)    |
| Observation Space  | ``Box(0, [5 5 5 1], (4,), int64)`` (P = T = 5)                          |
| Action Mask        | ``info["action_mask"]``, ``P + 2`` zeros and ones                      |

**Rewards**: the agent's at the end of the negotiation, the protocol's
two-agent reward by default (``reward="surplus"``: its surplus).

**Arguments**: ``side="seller"``, ``opponent="averaging"`` (any strategy
spec, or a strategy object), ``prices=5``, ``rounds=5`` or ``protocol=`` (a
:class:`~market.game.rules.Protocol`, the game with its time pressure), and as
the PettingZoo environment (:mod:`market.interop.pettingzoo_env`, which
lists them): ``first``, the ranges, ``reward``, the time-pressure keywords
and ``render_mode``.

**Version history**: v0, the first release (the discounts, then the risk
that the talks end and the costs per offer, were added later with defaults
that leave the game as it was).


The agent plays ``side`` (``"seller"`` or ``"buyer"``); the opponent is any
registered strategy named by a spec as the command line takes it
(``"averaging"``, ``"boulware"``, ``"spe"``, ``"qlearning:tables.npz"``,
``"negmas:NaiveTitForTatNegotiator"``, ``"genius:AgentK"``), which moves
inside ``reset`` and ``step`` until it is the agent's turn. Observations are
the four numbers of :mod:`market.interop.episode` (opponent's last offer,
round, own last offer, moved first), ``info["action_mask"]`` the legal
actions (Gymnasium's convention for masks); an episode is one negotiation
and ends when it does (``terminated``; it never truncates: no negotiation
exceeds ``2T`` moves). The reward comes at the end. All random choices (the
first mover when it is random, a random opponent's moves) come from the
environment's ``np_random``, seeded by ``reset(seed=...)``.

    import gymnasium as gym
    import market.interop.gymnasium_env  # registers the id

    env = gym.make("negotiation_market/Bargaining-v0", opponent="boulware", side="seller")
    obs, info = env.reset(seed=0)

Needs the ``rl`` extra (``pip install -e ".[rl]"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError('market.interop.gymnasium_env needs Gymnasium: pip install -e ".[rl]"') \
        from exc

from market.errors import UsageError
from market.game import policies
from market.game.rules import SIDE_NAMES, Negotiator, Protocol
from market.interop.episode import (
    Episode,
    action_index,
    check_seed,
    pressure_keywords,
    settings_for,
)
from market.interop.vector_env import Rows
from strategies import compiled, specs

ENV_ID = "negotiation_market/Bargaining-v0"


class BargainingEnv(gym.Env):
    """One side of alternating-offers bargaining against a registered strategy."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    @pressure_keywords
    def __init__(
        self,
        side: str = "seller",
        opponent: str | Negotiator = "averaging",
        prices: int | None = None,
        rounds: int | None = None,
        *,
        protocol: Protocol | None = None,
        first: str = "random",
        seller_range: tuple[int, int] | None = None,
        buyer_range: tuple[int, int] | None = None,
        reward: str = "two-agent",
        render_mode: str | None = None,
        **pressure: float | None,
    ) -> None:
        self.settings = settings_for(
            protocol, prices, rounds, seller_range, buyer_range, first, reward, **pressure)
        if side not in SIDE_NAMES:
            raise UsageError(f"side must be 'seller' or 'buyer' (got {side!r})")
        if render_mode not in (None, "ansi"):
            raise UsageError(f"render_mode must be None or 'ansi' (got {render_mode!r})")
        self.side = SIDE_NAMES.index(side)
        self.render_mode = render_mode
        protocol = self.settings.protocol
        if isinstance(opponent, str):
            self.opponent = specs.build(opponent, 1 - self.side, protocol, option="opponent")
        else:
            self.opponent = opponent
        self.observation_space = spaces.Box(0, self.settings.observation_high(), shape=(4,),
                                            dtype=np.int64)
        self.action_space = spaces.Discrete(protocol.n_actions)
        self.episode: Episode | None = None
        # the fast path: one compiled row (market.game.fastgame) when the opponent has a
        # compiled decision and no move list is kept for rendering; the same moves and draws
        self._row: Rows | None = None
        if render_mode is None and compiled.has_form(self.opponent):
            self._row = Rows(1, self.settings, self.side, self.opponent)
            self._act = np.zeros(1, dtype=np.int64)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=check_seed(seed))
        if self._row is not None:
            self._act[0] = -1
            self._row.done[0] = True
            self._row.step(self._act, self.np_random, autoreset=True)
            return self._row.obs[0].copy(), self._row_info()
        self.episode = Episode(self.settings, self.settings.draw_first(self.np_random))
        self._opponent_moves()
        return self.episode.observation(self.side), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._row is not None:
            return self._row_step(action)
        if self.episode is None or self.episode.done:
            raise RuntimeError("the negotiation is over: call reset()")
        legal = self.episode.play(action, self.np_random)
        self._opponent_moves()
        done = self.episode.done
        reward = self.episode.rewards()[self.side] if done else 0.0
        info = self._info()
        if not legal:
            info["illegal_action"] = int(action)
        return self.episode.observation(self.side), float(reward), done, False, info

    def _row_step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        row = self._row
        if row.done[0]:
            raise RuntimeError("the negotiation is over: call reset()")
        self._act[0] = action_index(action, self.settings.protocol.n_actions)
        row.step(self._act, self.np_random, autoreset=False)
        info = self._row_info()
        if row.illegal[0]:
            info["illegal_action"] = int(self._act[0])
        return row.obs[0].copy(), float(row.reward[0]), bool(row.done[0]), False, info

    def _row_info(self) -> dict[str, Any]:
        row = self._row
        info: dict[str, Any] = {"action_mask": row.mask[0].copy(),
                                "first": SIDE_NAMES[int(row.first[0])]}
        if row.done[0]:
            info["deal_level"] = int(row.level[0])
        return info

    def action_masks(self) -> np.ndarray:
        """The legal actions now, as booleans (sb3-contrib's ``MaskablePPO`` reads this)."""
        if self._row is not None:
            return self._row.mask[0].astype(bool)
        if self.episode is None:
            raise RuntimeError("action_masks() before reset(): call reset() first")
        return self.episode.mask(self.side).astype(bool)

    def _opponent_moves(self) -> None:
        episode = self.episode
        while not episode.done and episode.mover != self.side:
            episode.play_strategy(self.opponent, self.np_random)

    def _info(self) -> dict[str, Any]:
        episode = self.episode
        info: dict[str, Any] = {"action_mask": episode.mask(self.side),
                                "first": SIDE_NAMES[episode.first]}
        if episode.done:
            info["deal_level"] = episode.level
        return info

    def opponent_policy(self) -> np.ndarray:
        """The opponent's ``(2, S, A)`` policy, for :mod:`market.game.evaluation`.

        Exact for opponents whose moves depend only on what they observe
        (see :func:`market.game.policies.policy_of`): then
        ``evaluation.best_response(env.opponent_policy(), side, protocol)``
        is the best this environment's agent can do.
        """
        lo, hi = self.settings.range_of(1 - self.side)
        return policies.policy_of(self.opponent, self.settings.protocol, lo, hi)

    def render(self) -> str | None:
        """The moves so far as text (``render_mode="ansi"``)."""
        if self.render_mode is None or self.episode is None:
            return None
        return self.episode.render()


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:BargainingEnv")
