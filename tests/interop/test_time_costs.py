"""Time costs in the environments: a deal on the k-th offer pays each side its factor to the
power k, the same on the move-by-move and the compiled paths, within each library's checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from pettingzoo.test import api_test  # noqa: E402

from market.errors import UsageError  # noqa: E402
from market.interop import pettingzoo_env  # noqa: E402
from market.interop.gymnasium_env import BargainingEnv  # noqa: E402

DISCOUNTS = {"seller_discount": 0.5, "buyer_discount": 0.8}


def test_a_scripted_game_pays_discounted_rewards():
    game = pettingzoo_env.env(prices=5, rounds=3, first="seller", **DISCOUNTS)
    game.reset(seed=0)
    game.step(2)  # the Seller offers 3 (offer 0)
    game.step(1)  # the Buyer offers 2 (offer 1)
    game.step(5)  # the Seller accepts offer 1: worth 0.5 and 0.8 of its rewards
    assert game.rewards == pytest.approx({"seller": 2 / 5 * 0.5, "buyer": 3 / 5 * 0.8})


@pytest.mark.parametrize("opponent", ["averaging", "zi-c", "qlearning"])
@pytest.mark.parametrize("reward", ["two-agent", "surplus"])
def test_the_compiled_path_discounts_as_the_move_by_move_one(opponent, reward):
    kw = dict(side="buyer", opponent=opponent, prices=6, rounds=4, reward=reward, **DISCOUNTS)
    fast, slow = BargainingEnv(**kw), BargainingEnv(**kw)
    slow._row = None  # the Episode path
    plain = BargainingEnv(**{**kw, "seller_discount": 1.0, "buyer_discount": 1.0})
    agent = np.random.default_rng(3)
    discounted = 0
    for episode in range(40):
        for e in (fast, slow, plain):
            e.reset(seed=episode)
        done, moves = False, 0
        while not done:
            action = int(agent.integers(0, 8))
            fa, fb, fc = fast.step(action), slow.step(action), plain.step(action)
            assert fa[1] == pytest.approx(fb[1], rel=1e-12) and fa[2:4] == fb[2:4]
            assert np.array_equal(fa[0], fc[0])  # time costs change rewards, not play
            done, moves = fa[2], moves + 1
        if fc[1] > 0:
            ratio = fa[1] / fc[1]
            k = round(np.log(ratio) / np.log(0.8))
            assert ratio == pytest.approx(0.8 ** k) and k >= 0
            discounted += k > 0
    assert discounted > 0


def test_the_libraries_checks_pass_with_time_costs(capsys):
    check_env(BargainingEnv(opponent="zi-c", **DISCOUNTS), skip_render_check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(pettingzoo_env.env(prices=4, rounds=3, **DISCOUNTS), num_cycles=100)
    assert "Passed API test" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [0.0, 1.5, float("nan")])
def test_a_discount_outside_0_1_is_refused_naming_it(bad):
    with pytest.raises(UsageError, match=r"buyer_discount must be a number in \(0, 1\]"):
        BargainingEnv(buyer_discount=bad)
