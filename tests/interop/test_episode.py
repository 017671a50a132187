"""One negotiation move by move: the environments' settings, observations, masks and rewards."""

from __future__ import annotations

import numpy as np
import pytest

import strategies
from market.errors import UsageError
from market.game.protocol import Side, negotiate
from market.game.rules import BUYER, SELLER, Protocol
from market.interop.episode import Episode, Settings


@pytest.mark.parametrize("kwargs, needle", [
    ({"prices": 1}, "prices must be an integer >= 2"),
    ({"rounds": 0}, "rounds must be an integer >= 1"),
    ({"prices": 2.5}, "prices must be an integer"),
    ({"seller_range": (0, 5)}, "seller_range must satisfy 1 <= lo <= hi <= P=5"),
    ({"buyer_range": (4, 2)}, "buyer_range must satisfy"),
    ({"buyer_range": "x"}, "buyer_range must be two levels"),
    ({"first": "nobody"}, "first must be one of random, seller, buyer"),
    ({"reward": "money"}, "reward must be one of two-agent, surplus"),
])
def test_bad_settings_name_the_parameter(kwargs, needle):
    with pytest.raises(UsageError, match=needle):
        Settings(**kwargs)


def test_observation_mask_and_rewards_along_a_game():
    """Buyer opens at 2, Seller counters 4, Buyer accepts 4 (P = 5, T = 3)."""
    ep = Episode(Settings(5, 3), first=BUYER)
    assert ep.mover == BUYER
    np.testing.assert_array_equal(ep.observation(BUYER), [0, 0, 0, 1])
    np.testing.assert_array_equal(ep.mask(BUYER), [1, 1, 1, 1, 1, 0, 0])  # must offer
    np.testing.assert_array_equal(ep.mask(SELLER), [0] * 7)  # not its turn
    ep.play(1)  # offer level 2
    np.testing.assert_array_equal(ep.observation(SELLER), [2, 1, 0, 0])
    ep.play(3)  # offer level 4
    np.testing.assert_array_equal(ep.observation(BUYER), [4, 1, 2, 1])
    assert ep.play(5) and ep.done and ep.level == 4  # accept
    assert ep.rewards() == pytest.approx((0.8, 0.2))
    assert ep.render().splitlines()[-1] == "DEAL at 4"


def test_last_round_allows_only_accept_or_reject_and_illegal_moves_walk_away():
    ep = Episode(Settings(4, 1), first=SELLER)
    ep.play(3)
    np.testing.assert_array_equal(ep.mask(BUYER), [0, 0, 0, 0, 1, 1])
    assert not ep.play(0)  # an offer at the final decision: played as reject
    assert ep.done and ep.level == 0 and ep.rewards() == (0.0, 0.0)
    assert ep.history[-1] == (BUYER, 5)


def test_surplus_rewards_use_the_reservation_levels():
    ep = Episode(Settings(6, 2, seller_range=(2, 6), buyer_range=(1, 5), reward="surplus"),
                 first=SELLER)
    ep.play(3)  # Seller offers 4
    ep.play(6)  # Buyer accepts
    assert ep.rewards() == pytest.approx(((4 - 2) / 5, (5 - 4) / 5))


def test_strategies_moving_one_at_a_time_play_as_in_negotiate():
    """The episode steps the protocol's own Lockstep: the same game as one negotiate call."""
    protocol = Protocol(7, 4)
    for seller, buyer in (("averaging", "tit-for-tat"), ("boulware", "conceder")):
        for first in (SELLER, BUYER):
            settings = Settings(7, 4, seller_range=(2, 7), buyer_range=(1, 6))
            s = strategies.make(seller, SELLER, 1, protocol)
            b = strategies.make(buyer, BUYER, 1, protocol)
            ep = Episode(settings, first)
            rng = np.random.default_rng(0)
            while not ep.done:
                ep.play_strategy(s if ep.mover == SELLER else b, rng)
            rec = negotiate(protocol, Side.single(s, 1, 2, 7), Side.single(b, 1, 1, 6), first,
                            np.random.default_rng(0))
            assert [a for _, a in ep.history] == list(rec.actions[0, : rec.n_moves[0]])
            assert ep.level == rec.level[0]


def test_every_environment_takes_the_game_as_a_protocol():
    """``protocol=`` carries the sizes and every kind of time pressure; the keywords are a
    convenience that builds the same game; both at once, or something else, is refused."""
    from market.game.rules import Protocol
    from market.interop.gymnasium_env import BargainingEnv
    from market.interop.pettingzoo_env import raw_env
    from market.interop.vector_env import BargainingVectorEnv

    game = Protocol(6, 4, 0.9, 0.8, 0.1, 0.01, 0.02)
    keywords = dict(seller_discount=0.9, buyer_discount=0.8, breakdown=0.1, seller_cost=0.01,
                    buyer_cost=0.02)
    for make in (lambda **kw: BargainingEnv("seller", "averaging", **kw),
                 lambda **kw: BargainingVectorEnv(4, "seller", "averaging", **kw),
                 lambda **kw: raw_env(**kw)):
        a, b = make(protocol=game), make(prices=6, rounds=4, **keywords)
        assert a.settings == b.settings and a.settings.protocol == game
        with pytest.raises(UsageError, match="protocol= or as keywords, not both.*breakdown"):
            make(protocol=game, breakdown=0.2)
        with pytest.raises(UsageError, match="protocol must be a market.game.rules.Protocol"):
            make(protocol=(6, 4))
        with pytest.raises(TypeError, match="unexpected keyword argument 'seller_discont'"):
            make(seller_discont=0.9)  # a misspelt kind of pressure is never dropped


def test_the_environments_take_every_declared_kind_of_pressure_by_name():
    """The pressure keywords come from the declarations (one place) and show in each
    environment's signature."""
    import inspect

    from market.game.pressure import PRESSURE
    from market.interop.gymnasium_env import BargainingEnv
    from market.interop.pettingzoo_env import BargainingEnv as AEC
    from market.interop.vector_env import BargainingVectorEnv

    for cls in (BargainingEnv, AEC, BargainingVectorEnv):
        shown = inspect.signature(cls).parameters
        assert all(shown[d.name].default is None for d in PRESSURE), cls
