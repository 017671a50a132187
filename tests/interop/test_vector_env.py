"""The compiled environments: the vector one and the single one's fast path play exactly the
game of the move-by-move environment, with the same draws, and keep Gymnasium's rules."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.vector import SyncVectorEnv  # noqa: E402

import strategies  # noqa: E402
from market.interop.gymnasium_env import BargainingEnv  # noqa: E402
from market.interop.vector_env import BargainingVectorEnv  # noqa: E402
from strategies import compiled  # noqa: E402

OPPONENTS = sorted(n for n in strategies.names() if compiled.has_form(strategies.get(n)))


def _slow(**kw) -> BargainingEnv:
    env = BargainingEnv(**kw)
    env._row = None  # the move-by-move path (Episode), the readable specification
    return env


@pytest.mark.parametrize("opponent", OPPONENTS)
@pytest.mark.parametrize("side,first,pressure", [
    ("seller", "random", {}), ("buyer", "random", {}), ("seller", "buyer", {}),
    ("buyer", "random", {"breakdown": 0.3, "buyer_cost": 0.05, "seller_cost": 0.02}),
])
def test_the_fast_single_environment_plays_the_same_game(opponent, side, first, pressure):
    """Move by move and compiled alike, breakdown draws and costs included."""
    kw = dict(side=side, opponent=opponent, prices=6, rounds=4, first=first,
              seller_range=(2, 6), buyer_range=(1, 5), **pressure)
    fast, slow = BargainingEnv(**kw), _slow(**kw)
    assert fast._row is not None
    agent = np.random.default_rng(7)
    for episode in range(30):
        seed = episode if episode % 3 == 0 else None
        a, b = fast.reset(seed=seed), slow.reset(seed=seed)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1]["action_mask"],
                                                             b[1]["action_mask"])
        done = False
        while not done:
            action = int(agent.integers(0, 8))  # illegal ones too: played as reject
            fa, fb = fast.step(action), slow.step(action)
            assert np.array_equal(fa[0], fb[0]) and fa[1:4] == fb[1:4]
            assert fa[4].keys() == fb[4].keys()
            assert all(np.array_equal(fa[4][k], fb[4][k]) for k in fa[4])
            done = fa[2]


@pytest.mark.parametrize("opponent,pressure", [
    ("zi-c", {}), ("averaging", {}), ("qlearning", {}),
    ("averaging", {"breakdown": 0.25, "buyer_cost": 0.04}), ("zi-c", {"breakdown": 0.4}),
])
def test_one_row_of_the_vector_environment_is_the_single_environment(opponent, pressure):
    """Next-step autoreset: the step after the last one starts the next negotiation."""
    vec = BargainingVectorEnv(1, side="buyer", opponent=opponent, **pressure)
    single = _slow(side="buyer", opponent=opponent, **pressure)
    obs, infos = vec.reset(seed=3)
    s_obs, s_info = single.reset(seed=3)
    agent = np.random.default_rng(0)
    ended = False
    for _ in range(200):
        assert np.array_equal(obs[0], s_obs)
        assert np.array_equal(infos["action_mask"][0], s_info["action_mask"])
        action = int(agent.integers(0, 7))
        obs, rewards, terms, truncs, infos = vec.step(np.array([action]))
        assert not truncs[0]
        if ended:  # the reset step: the action is ignored
            s_obs, s_info = single.reset()
            assert not terms[0] and rewards[0] == 0.0
            ended = False
            continue
        s_obs, s_reward, s_term, _, s_info = single.step(action)
        assert rewards[0] == s_reward and terms[0] == s_term
        assert infos["illegal_action"][0] == ("illegal_action" in s_info)
        if s_term:
            assert infos["deal_level"][0] == s_info["deal_level"] and infos["_deal_level"][0]
        ended = bool(terms[0])


def test_rows_are_independent_games_as_in_gymnasiums_own_vector_of_environments():
    n = 16
    kw = dict(side="seller", opponent="boulware", first="buyer")
    vec = BargainingVectorEnv(n, **kw)
    sync = SyncVectorEnv([lambda: BargainingEnv(**kw) for _ in range(n)])
    obs, _ = vec.reset(seed=0)
    s_obs, _ = sync.reset(seed=0)
    agent = np.random.default_rng(1)
    for _ in range(60):
        assert np.array_equal(obs, s_obs)
        actions = agent.integers(0, 7, n)
        obs, rewards, terms, truncs, infos = vec.step(actions)
        s_obs, s_rewards, s_terms, s_truncs, s_infos = sync.step(actions)
        assert np.array_equal(rewards, s_rewards) and np.array_equal(terms, s_terms)
        assert vec.observation_space.contains(obs)
    sync.close()


def test_the_vector_environment_refuses_what_is_not_in_its_spaces():
    vec = BargainingVectorEnv(4, opponent="linear")
    with pytest.raises(RuntimeError, match="before reset"):
        vec.step(np.zeros(4, dtype=np.int64))
    vec.reset(seed=0)
    for bad, needle in ((np.zeros(3, dtype=np.int64), "shape"), (np.full(4, 2.5), "dtype"),
                        (np.full(4, 9), "got 9..9"), (np.full(4, -1), "got -1..-1")):
        with pytest.raises(ValueError, match=r"actions must be 4 integers in \[0, 6\]"):
            vec.step(bad)
        del needle
    with pytest.raises(ValueError, match="num_envs must be an integer"):
        BargainingVectorEnv(0)
    with pytest.raises(ValueError, match="has no compiled decision"):
        BargainingVectorEnv(2, opponent=_PythonOnly(1, 1))
    assert vec.action_masks().shape == (4, 7) and vec.action_masks().dtype == bool


class _PythonOnly:
    name = "python-only"
    classifier = {"learns": False}

    def __init__(self, side, n):
        self.side = side

    def act(self, obs, rng):
        return np.full(len(obs), obs.protocol.reject)


def test_a_vector_environment_too_large_for_memory_is_refused_up_front():
    from market.errors import UsageError

    with pytest.raises(UsageError, match="rows at P=1000 would need about .* of memory"):
        BargainingVectorEnv(10_000_000, prices=1000)
