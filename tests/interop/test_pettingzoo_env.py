"""The PettingZoo AEC environment passes PettingZoo's own checks and plays the protocol."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, seed_test  # noqa: E402

from market.interop.pettingzoo_env import BargainingEnv, env  # noqa: E402


@pytest.mark.parametrize("kwargs", [
    {"prices": 5, "rounds": 3},
    {"prices": 4, "rounds": 2, "first": "buyer", "reward": "surplus", "seller_range": (2, 4),
     "buyer_range": (1, 3)},
    {"prices": 5, "rounds": 4, "breakdown": 0.3, "seller_cost": 0.05},
])
def test_api_test_passes(kwargs, capsys):
    with warnings.catch_warnings():
        # PettingZoo's advice for Dict observations and agent names such as "player_0"
        warnings.simplefilter("ignore", UserWarning)
        api_test(env(**kwargs), num_cycles=200)
    assert "Passed API test" in capsys.readouterr().out


def test_seed_test_passes():
    seed_test(lambda: env(prices=6, rounds=4), num_cycles=100)


def test_a_scripted_game_and_its_rewards():
    game = env(prices=5, rounds=3, first="seller")
    game.reset(seed=0)
    assert game.agent_selection == "seller"
    game.step(4)  # Seller offers 5
    assert game.agent_selection == "buyer"
    obs = game.observe("buyer")
    np.testing.assert_array_equal(obs["observation"], [5, 1, 0, 0])
    np.testing.assert_array_equal(obs["action_mask"], [1] * 7)
    game.step(5)  # Buyer accepts
    assert all(game.terminations.values())
    assert game.rewards == {"seller": 1.0, "buyer": 0.0}
    assert game.render() is None  # no render mode asked for
    for _ in game.agent_iter():  # both agents step out with None
        game.step(None)
    assert game.agents == []


def test_random_first_mover_follows_the_reset_seed():
    firsts = []
    for seed in range(12):
        game = BargainingEnv(prices=3, rounds=2)
        game.reset(seed=seed)
        firsts.append(game.agent_selection)
        again = BargainingEnv(prices=3, rounds=2)
        again.reset(seed=seed)
        assert again.agent_selection == firsts[-1]
    assert set(firsts) == {"seller", "buyer"}


def test_illegal_action_walks_away_and_is_reported():
    game = env(prices=4, rounds=2, first="buyer", render_mode="ansi")
    game.reset(seed=0)
    game.step(5)  # reject at move 0, where only offers are legal
    assert all(game.terminations.values())
    assert game.infos["buyer"] == {"illegal_action": 5}
    assert game.render() == "move 0: buyer rejects\nNO DEAL"


def test_packaged_as_pettingzoos_own_environments():
    """``env()`` wrapped (order enforcing), ``raw_env`` the class, ``parallel_env()`` by
    PettingZoo's turn-based conversion, ``flat_env()`` one Box observation."""
    from pettingzoo.test import api_test, parallel_api_test
    from pettingzoo.utils import wrappers

    from market.interop.pettingzoo_env import flat_env, parallel_env, raw_env

    game = env()
    assert isinstance(game, wrappers.OrderEnforcingWrapper) and isinstance(game.unwrapped,
                                                                            raw_env)
    with pytest.raises(Exception, match="reset"):
        game.step(0)
    api_test(env(), num_cycles=50)
    parallel_api_test(parallel_env(), num_cycles=50)
    flat = flat_env(prices=4, rounds=3)
    api_test(flat, num_cycles=50)
    flat.reset(seed=0)
    obs, *_ = flat.last()
    space = flat.observation_space(flat.agent_selection)
    assert space.shape == (4 + 6,) and space.contains(obs)
    assert obs[4:].tolist() == [1, 1, 1, 1, 0, 0]  # the opening move: offers only


def test_supersuits_observation_wrappers_take_the_flat_environment():
    """SuperSuit's wrappers need a Box observation: the Dict one fails inside them, the flat
    one works (and keeps the mask as its last entries)."""
    supersuit = pytest.importorskip("supersuit")
    from market.interop.pettingzoo_env import flat_env

    with pytest.raises(AttributeError):
        supersuit.dtype_v0(env(), np.float32)
    game = supersuit.normalize_obs_v0(supersuit.dtype_v0(flat_env(), np.float32), env_min=0,
                                      env_max=1)
    game.reset(seed=0)
    obs, *_ = game.last()
    assert obs.dtype == np.float32 and obs.shape == (11,) and (obs >= 0).all() and (obs <= 1).all()


def test_the_parallel_environment_names_the_missing_movers_action():
    from market.interop.pettingzoo_env import parallel_env

    par = parallel_env()
    par.reset(seed=0)
    mover = par.aec_env.agent_selection
    other = "buyer" if mover == "seller" else "seller"
    with pytest.raises(ValueError, match=f"actions must hold the action of '{mover}'"):
        par.step({other: 0})
    par.step({mover: 0})  # the other's action may be left out
