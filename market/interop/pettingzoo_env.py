"""The two-agent game as a PettingZoo AEC environment: agents ``seller`` and ``buyer``.

This environment is part of the two-agent game (``market.interop``).

| Import             | ``from market.interop.pettingzoo_env import env``                       |
|--------------------|-------------------------------------------------------------------------|
| Actions            | Discrete                                                                |
| Parallel API       | Yes (``parallel_env()``, turn-based)                                    |
| Manual Control     | No                                                                      |
| Agents             | ``agents= ['seller', 'buyer']``                                         |
| Agents             | 2                                                                       |
| Action Shape       | (1,)                                                                    |
| Action Values      | ``[0, P + 1]``: offer level ``a + 1``, ``P`` accept, ``P + 1`` reject   |
| Action Space       | ``Discrete(7)`` (P = 5)                                                 |
| Observation Shape  | (4,) and a mask of P + 2                                                |
| Observation Values | ``[0, max(P, T)]`` (last offer, round, own last offer, moved first)     |
| Observation Space  | ``Dict('action_mask': Box(0, 1, (7,), int8), 'observation': Box(0, [5 5 5 1], (4,), int64))`` |

**Rewards**: at the end of the negotiation, the protocol's two-agent rewards
(Seller ``p / P``, Buyer ``1 - p / P`` at a deal on level ``p``, both 0
without one; discounted and less the costs per offer with time costs);
``reward="surplus"``
pays each side its surplus over its reservation range.

**Arguments**: ``env(prices=5, rounds=5, *, protocol=None, first="random",
seller_range=None, buyer_range=None, reward="two-agent", render_mode=None,
**pressure)``: the game as ``protocol`` (a :class:`~market.game.rules.Protocol`:
its sizes and every kind of time pressure), or, as a convenience, ``prices`` P
and ``rounds`` T and the pressure keywords (not both: one per declaration
of :mod:`market.game.pressure`, which the signature lists); ``first``
the first mover (``"seller"``, ``"buyer"`` or ``"random"`` per reset);
``seller_range``/``buyer_range`` each side's acceptable levels; ``reward``
``"two-agent"`` or ``"surplus"``; the discounts each side's factor per offer
in (0, 1]; ``breakdown`` the risk in [0, 1) that the talks end with no deal
after each counter-offer; the costs each side's cost per offer made before a
deal, in [0, 1); ``render_mode`` ``"ansi"`` or None.

**Version history**: v0, the first release (the discounts, then the
breakdown risk and the costs, were added later with defaults that leave the
game without time costs; ``protocol=`` later still).


Alternating offers are turn-based, which is what PettingZoo's AEC API
(agent environment cycle) models: ``env.agent_selection`` is the side to
move, ``env.last()`` gives its observation, ``env.step(action)`` plays it.
Each agent observes ``{"observation": [last offer, round, own last offer,
moved first], "action_mask": legal actions}`` (see
:mod:`market.interop.episode`); actions are the protocol's indices
(``0 .. P-1`` offer level ``a + 1``, ``P`` accept, ``P + 1`` reject).
Rewards come at the end, the protocol's two-agent rewards by default.
``first="random"`` draws the first mover at every reset from the reset's
seed, so ``reset(seed=s)`` replays the same game.

    from market.interop.pettingzoo_env import env

    game = env(prices=5, rounds=5)
    game.reset(seed=0)
    for agent in game.agent_iter():
        obs, reward, terminated, truncated, info = game.last()
        action = None if terminated or truncated else game.action_space(agent).sample(
            obs["action_mask"])
        game.step(action)

``env()`` is wrapped as PettingZoo's environments are (order enforcing);
``raw_env`` is the class itself, ``parallel_env()`` the same game through
PettingZoo's ``turn_based_aec_to_parallel``, and ``flat_env()`` gives one
``Box`` observation (the four numbers, then the mask) for SuperSuit's
observation wrappers, which cannot take the ``Dict``.

Needs the ``rl`` extra (``pip install -e ".[rl]"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from gymnasium import spaces
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError('market.interop.pettingzoo_env needs PettingZoo: pip install -e ".[rl]"') \
        from exc

from market.game.rules import SIDE_NAMES, Protocol, side_index
from market.interop.episode import Episode, check_seed, pressure_keywords, settings_for


class BargainingEnv(AECEnv):
    """Alternating-offers bargaining between a Seller and a Buyer (PettingZoo AEC)."""

    metadata = {"name": "bargaining_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    @pressure_keywords
    def __init__(
        self,
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
        super().__init__()
        self.settings = settings_for(
            protocol, prices, rounds, seller_range, buyer_range, first, reward, **pressure)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi' (got {render_mode!r})")
        self.render_mode = render_mode
        self.possible_agents = list(SIDE_NAMES)
        self.agents = list(self.possible_agents)
        n = self.settings.protocol.n_actions
        high = self.settings.observation_high()
        self.observation_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(0, high, shape=(4,), dtype=np.int64),
                "action_mask": spaces.Box(0, 1, shape=(n,), dtype=np.int8),
            })
            for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.Discrete(n) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.episode: Episode | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seed = check_seed(seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.episode = Episode(self.settings, self.settings.draw_first(self._rng))
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = SIDE_NAMES[self.episode.mover]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        side = side_index(agent)
        return {"observation": self.episode.observation(side),
                "action_mask": self.episode.mask(side)}

    def step(self, action: Any) -> None:
        if getattr(self, "episode", None) is None:
            raise RuntimeError("step() before reset(): call reset() first")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        legal = self.episode.play(action, self._rng)
        self.infos[agent] = {} if legal else {"illegal_action": int(action)}
        if self.episode.done:
            seller, buyer = self.episode.rewards()
            self.rewards = {"seller": seller, "buyer": buyer}
            self.terminations = dict.fromkeys(self.agents, True)
            self.agent_selection = SIDE_NAMES[1 - side_index(agent)]
        else:
            self.agent_selection = SIDE_NAMES[self.episode.mover]
        self._accumulate_rewards()

    def render(self) -> str | None:
        """The moves so far as text (``render_mode="ansi"``)."""
        if self.render_mode is None or self.episode is None:
            return None
        return self.episode.render()

    def close(self) -> None:
        pass


#: the unwrapped environment, under the name PettingZoo's own environments give it
raw_env = BargainingEnv


def env(**kwargs: Any) -> AECEnv:
    """The environment, wrapped as PettingZoo's own are: its ``OrderEnforcingWrapper``
    refuses ``step()`` or ``last()`` before ``reset()``. An action the rules forbid at
    a move is played as reject (the documented rule, not an error)."""
    return wrappers.OrderEnforcingWrapper(BargainingEnv(**kwargs))


def parallel_env(**kwargs: Any) -> Any:
    """A ``ParallelEnv`` through PettingZoo's turn-based conversion: at each step only the
    agent whose turn it is acts (the other's action is ignored, and may be left out; the
    mover's missing action is refused naming it, where PettingZoo's conversion raised a
    bare ``KeyError``)."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

    class TurnBased(turn_based_aec_to_parallel_wrapper):
        def step(self, actions: dict[str, Any]) -> Any:
            mover = self.aec_env.agent_selection if self.agents else None
            if mover is not None and (not isinstance(actions, dict) or mover not in actions):
                got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
                raise ValueError(f"actions must hold the action of {mover!r}, whose turn it "
                                 f"is (got {got})")
            return super().step(actions)

    return TurnBased(env(**kwargs))


class FlatObservation(wrappers.BaseWrapper):
    """Observations as one integer vector: the four numbers, then the action mask.

    SuperSuit's observation wrappers (``dtype_v0``, ``normalize_obs_v0``, frame
    stacking) need a ``Box`` observation; the ``Dict`` of ``observation`` and
    ``action_mask`` has none. The mask stays usable: it is the last
    ``P + 2`` entries.
    """

    def __init__(self, game: AECEnv) -> None:
        super().__init__(game)
        base = game.unwrapped
        high = np.concatenate([base.settings.observation_high(),
                               np.ones(base.settings.protocol.n_actions, dtype=np.int64)])
        self._space = spaces.Box(0, high, shape=high.shape, dtype=np.int64)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._space

    def observe(self, agent: str) -> np.ndarray:
        obs = super().observe(agent)
        return np.concatenate([obs["observation"], obs["action_mask"].astype(np.int64)])


def flat_env(**kwargs: Any) -> AECEnv:
    """:func:`env` with :class:`FlatObservation`: for SuperSuit's observation wrappers."""
    return FlatObservation(env(**kwargs))
