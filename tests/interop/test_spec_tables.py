"""The environments' docstrings open with PettingZoo's spec table, and it says the truth:
the spaces it states are those the environments build with their defaults."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pettingzoo")


def _row(doc: str, name: str) -> str:
    m = re.search(rf"^\| {name} +\| (.*?) *\|$", doc, re.M)
    assert m, f"no {name!r} row in the spec table"
    return m.group(1)


def test_the_pettingzoo_table_states_the_spaces():
    from market.interop import pettingzoo_env

    doc = pettingzoo_env.__doc__
    game = pettingzoo_env.env()
    game.reset(seed=0)
    assert f"``{game.action_space('seller')}``" in _row(doc, "Action Space")
    assert f"``{game.observation_space('seller')}``" in _row(doc, "Observation Space")
    assert str(game.possible_agents) in _row(doc, "Agents")
    for row in ("Import", "Actions", "Parallel API"):
        _row(doc, row)
    assert "**Version history**" in doc and "**Arguments**" in doc


def test_the_gymnasium_tables_state_the_spaces():
    from market.interop import gymnasium_env, vector_env

    single = gymnasium_env.BargainingEnv()
    assert f"``{single.action_space}``" in _row(gymnasium_env.__doc__, "Action Space")
    assert f"``{single.observation_space}``" in _row(gymnasium_env.__doc__,
                                                     "Observation Space")
    envs = vector_env.BargainingVectorEnv(4)
    assert f"``{envs.action_space}``" in _row(vector_env.__doc__, "Action Space")
    first = str(envs.observation_space).split("\n")[0]
    assert first.removeprefix("Box(0, ") in _row(vector_env.__doc__, "Observation Space")
    for doc in (gymnasium_env.__doc__, vector_env.__doc__):
        assert "**Version history**" in doc and "**Arguments**" in doc
