"""The Gymnasium environment passes check_env, and a tabular learner trained through it
reaches the exact best response to its opponent."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from market.errors import UsageError  # noqa: E402
from market.game import evaluation, policies, qtable  # noqa: E402
from market.interop.gymnasium_env import ENV_ID, BargainingEnv  # noqa: E402


@pytest.mark.parametrize("kwargs", [
    {"opponent": "averaging"},
    {"side": "buyer", "opponent": "zi-c", "prices": 7, "rounds": 3},
    {"opponent": "spe", "first": "buyer", "reward": "surplus", "seller_range": (2, 5)},
    {"opponent": "negmas:NaiveTitForTatNegotiator", "rounds": 3},
    {"opponent": "zi-c", "breakdown": 0.3, "seller_cost": 0.05, "buyer_cost": 0.02},
])
def test_check_env_passes(kwargs):
    if kwargs["opponent"].startswith("negmas"):
        pytest.importorskip("negmas")
    check_env(BargainingEnv(**kwargs), skip_render_check=True)


def test_registered_id_builds_the_environment():
    env = gym.make(ENV_ID, opponent="boulware", render_mode="ansi")
    check_env(env.unwrapped)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and "action_mask" in info


def test_the_opponent_opens_inside_reset():
    env = BargainingEnv(side="buyer", opponent="hardliner", prices=5, rounds=3, first="seller")
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(obs, [5, 1, 0, 0])  # the hardliner asks for level 5
    np.testing.assert_array_equal(info["action_mask"], [1] * 7)
    obs, reward, terminated, truncated, info = env.step(5)  # accept
    assert terminated and not truncated and reward == 0.0 and info["deal_level"] == 5
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


@pytest.mark.parametrize("kwargs, needle", [
    ({"side": "both"}, "side must be 'seller' or 'buyer'"),
    ({"opponent": "nope"}, "opponent: unknown strategy 'nope'"),
    ({"prices": 1}, "prices must be an integer >= 2"),
    ({"first": "x"}, "first must be one of"),
])
def test_bad_parameters_are_refused(kwargs, needle):
    with pytest.raises(UsageError, match=needle):
        BargainingEnv(**kwargs)


def train(env: BargainingEnv, episodes: int, seed: int = 0) -> np.ndarray:
    """Ten lines of tabular Q-learning through the environment (as in the interop guide): explore
    uniformly among the legal actions, back up the greedy value (learning rate 1, the
    opponent being deterministic)."""
    game = env.settings.protocol
    Q = np.zeros((2, qtable.n_rows(game), game.n_actions))
    key = lambda o: (1 - o[3], int(qtable.row(game, o[0], max(o[1] - 1, 0))))  # noqa: E731
    rng = np.random.default_rng(seed)
    for episode in range(episodes):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            a = rng.choice(np.flatnonzero(info["action_mask"]))
            nxt, r, done, _, info = env.step(a)
            Q[key(obs)][a] = r if done else Q[key(nxt)][info["action_mask"] == 1].max()
            obs = nxt
    return Q


@pytest.mark.parametrize("kwargs", [
    {"side": "buyer", "opponent": "linear", "prices": 5, "rounds": 3,
     "seller_range": (2, 5), "buyer_range": (1, 4)},
    {"side": "seller", "opponent": "conceder", "prices": 6, "rounds": 3,
     "seller_range": (2, 6), "buyer_range": (1, 5)},
])
def test_a_learner_trained_through_the_env_reaches_the_exact_best_response(kwargs):
    env = BargainingEnv(**kwargs)
    game, side = env.settings.protocol, kwargs["side"]
    opponent = env.opponent_policy()
    br_seller_first, br_buyer_first, _ = evaluation.best_response(opponent, side, game)
    learned = policies.greedy_policy(train(env, 400), game)
    pair = (learned, opponent) if side == "seller" else (opponent, learned)
    values = [evaluation.values(*pair, game, first)[0 if side == "seller" else 1]
              for first in ("seller", "buyer")]
    assert values == pytest.approx([br_seller_first, br_buyer_first], abs=1e-12)
    # and it is not a trivial game: doing nothing (always walking away or opening at once
    # and accepting) would not reach it
    assert max(br_seller_first, br_buyer_first) > 0.4


def _exhaustive(side: str, opponent, first: str, prices: int, rounds: int) -> float:
    """The best reward any sequence of the agent's actions gets in the real environment."""
    def value(prefix: list[int]) -> float:
        env = BargainingEnv(side=side, opponent=opponent, prices=prices, rounds=rounds,
                            first=first)
        _, info = env.reset(seed=0)
        reward, done = 0.0, False
        for a in prefix:
            _, reward, done, _, info = env.step(a)
        if done:
            return reward
        return max(value([*prefix, int(a)]) for a in np.flatnonzero(info["action_mask"]))

    return value([])


@pytest.mark.parametrize("opponent", ["averaging", "boulware", "linear", "conceder",
                                      "hardliner", "tit-for-tat", "spe", "table"])
@pytest.mark.parametrize("side", ["seller", "buyer"])
def test_best_responses_are_exact_or_refused(opponent, side, tmp_path):
    """Against every deterministic strategy, the evaluator's best response equals an
    exhaustive search of the environment, or the opponent is refused, saying why."""
    from market.game import evaluation, qtable
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    P, T = 4, 3
    if opponent == "table":  # a saved table, played frozen
        proto = Protocol(P, T)
        shape = (2, qtable.n_rows(proto), proto.n_actions)
        rng = np.random.default_rng(5)
        save_tables(tmp_path / "t.npz", TablePair(proto, rng.random(shape), rng.random(shape)))
        opponent = f"qlearning:{tmp_path / 't.npz'}"
    env = BargainingEnv(side=side, opponent=opponent, prices=P, rounds=T)
    if opponent in ("averaging", "tit-for-tat"):
        with pytest.raises(ValueError, match="remembers"):
            env.opponent_policy()
        return
    v_seller_first, v_buyer_first, _ = evaluation.best_response(
        env.opponent_policy(), side, env.settings.protocol)
    for first, value in (("seller", v_seller_first), ("buyer", v_buyer_first)):
        assert value == pytest.approx(_exhaustive(side, opponent, first, P, T)), first
