"""The environments under odd input: each value is taken by the documented rule or refused
in one clear error naming the argument, never a numpy or attribute error from inside."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("pettingzoo")

from market.interop.gymnasium_env import BargainingEnv as GymEnv  # noqa: E402
from market.interop.pettingzoo_env import BargainingEnv as AecEnv  # noqa: E402


@pytest.mark.parametrize("action", [2.7, "3", True, 10**30, -1, 7, None, [1, 2]])
def test_an_action_outside_the_space_is_refused_naming_it(action):
    gym = GymEnv(side="seller", opponent="averaging")
    gym.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 6\]"):
        gym.step(action)
    aec = AecEnv()
    aec.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be an integer in \[0, 6\]"):
        aec.step(action)


@pytest.mark.parametrize("action", [2, np.int64(2), np.array(2), np.array([2])])
def test_integer_actions_of_every_usual_kind_are_taken(action):
    gym = GymEnv(side="seller", opponent="averaging", first="seller")
    gym.reset(seed=0)
    _, _, _, _, info = gym.step(action)
    assert "illegal_action" not in info


def test_step_before_reset_is_one_clear_error():
    with pytest.raises(RuntimeError, match="before reset"):
        AecEnv().step(0)


@pytest.mark.parametrize("seed", [-1, 2.5, "7", True])
def test_reset_refuses_a_seed_numpy_would_not_take(seed):
    for env in (GymEnv(side="buyer", opponent="averaging"), AecEnv()):
        with pytest.raises(ValueError, match="seed must be None or an integer >= 0"):
            env.reset(seed=seed)


def test_a_range_of_non_integer_levels_is_refused_not_cut():
    from market.errors import UsageError

    with pytest.raises(UsageError, match="two integer levels"):
        AecEnv(seller_range=(1, 5.9))
    with pytest.raises(UsageError, match="two integer levels"):
        GymEnv(side="seller", opponent="averaging", buyer_range=(1.5, 3))


def test_an_opponent_table_with_odd_archive_members_is_a_value_error(tmp_path):
    import zipfile

    from market.game import qtable
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    proto = Protocol(5, 5)
    shape = (qtable.n_rows(proto), proto.n_actions)
    good, odd = tmp_path / "good.npz", tmp_path / "odd.npz"
    save_tables(good, TablePair(proto, np.zeros(shape), np.zeros(shape)))
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(odd, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename.removesuffix(".npy"), zin.read(info))
    with pytest.raises(ValueError, match="member 'seller'"):
        GymEnv(side="seller", opponent=f"qlearning:{odd}")
