"""A trader's strategy is data: a model changes it between steps without being rebuilt.

``MarketModel.set_strategy`` moves traders into another population of their
side (fresh members, copies of a member, or a strategy new to the mix); both
engines must then play alike (identical tables and generator state), the
switched traders must play their new strategy, and nothing is compiled anew.
"""

from __future__ import annotations

import numpy as np
import pytest

from market.sim.model import MarketModel

MARKET = dict(n_sellers=30, n_buyers=30, seller_mix={"averaging": 0.5, "qlearning": 0.5},
              buyer_mix={"boulware": 0.5, "qlearning": 0.5}, period=4, clock=True,
              learner_params="drawn", seed=11)


def _switch(model: MarketModel) -> None:
    """Fresh members, copied members, a strategy new to the side, and traders moving back."""
    model.set_strategy("seller", np.arange(8), "hardliner")
    q = model.market.names[1].index("qlearning")
    movers = np.flatnonzero(model.buyers.strategy != q)[:4]
    like = np.flatnonzero(model.buyers.strategy == q)[:4]
    model.set_strategy(1, movers, "qlearning", like=like)
    model.set_strategy("buyer", np.flatnonzero(model.buyers.strategy == q)[-3:], "boulware")
    model.set_strategy("seller", np.arange(3), 0)


def _run(engine: str) -> MarketModel:
    model = MarketModel(engine=engine, **MARKET)
    for step in range(14):
        if step in (5, 9):
            _switch(model)
        model.step()
    return model


def test_changing_strategies_mid_run_plays_alike_on_both_engines():
    a, b = _run("compiled"), _run("lockstep")
    for frame, fa in a.datacollector.frames().items():
        assert fa.equals(b.datacollector.frames()[frame]), frame
    for side in (0, 1):
        assert a.market.names[side] == b.market.names[side]
        for sa, sb in zip(a.market.strategies[side], b.market.strategies[side], strict=True):
            if hasattr(sa, "tables"):
                assert np.array_equal(sa.tables, sb.tables)
                assert np.array_equal(sa.played, sb.played)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    assert a.market.names[0] == ["averaging", "qlearning", "hardliner"]


@pytest.mark.parametrize("engine", ["compiled", "lockstep"])
def test_switched_traders_play_their_new_strategy(engine):
    model = MarketModel(engine=engine, **{**MARKET, "clock": False})
    for _ in range(4):
        model.step()
    assert model.summary()["deals"] > 0
    module = getattr(model.engine, "module", None)
    model.set_strategy("seller", np.arange(30), "hardliner")
    model.set_strategy("buyer", np.arange(30), "hardliner")
    deals = model.summary()["deals"]
    for _ in range(4):
        model.step()
    assert model.summary()["deals"] == deals  # two hardliners never meet halfway
    assert set(model.last_step.frame()["seller_strategy"]) == {"hardliner"}
    assert set(model.market.agents_now()["strategy"]) == {"hardliner"}
    assert getattr(model.engine, "module", None) is module  # nothing compiled anew


def test_a_copied_learner_starts_from_its_original_and_a_fresh_one_from_scratch():
    model = MarketModel(**MARKET)
    for _ in range(12):
        model.step()
    q = model.market.names[0].index("qlearning")
    learners = model.market.strategies[0][q]
    book = model.sellers
    members = np.flatnonzero(book.strategy == q)
    learned = np.abs(learners.tables[book.member[members]]).sum(axis=(1, 2, 3))
    original = int(members[np.argmax(learned)])
    mover, fresh = np.flatnonzero(book.strategy != q)[:2]
    table = learners.tables[book.member[original]].copy()
    assert table.any()
    model.set_strategy(0, [mover], "qlearning", like=[original])
    model.set_strategy(0, [fresh], "qlearning")
    learners = model.market.strategies[0][q]
    assert np.array_equal(learners.tables[book.member[mover]], table)
    assert learners.lr[book.member[mover]] == learners.lr[book.member[original]]
    assert not learners.tables[book.member[fresh]].any()
    assert learners.played[book.member[fresh]] == 0


def test_members_left_behind_are_reused_before_a_population_grows():
    model = MarketModel(**MARKET)
    q = model.market.names[0].index("qlearning")
    learners = model.market.strategies[0][q]
    n = learners.n_members
    away = np.flatnonzero(model.sellers.strategy == q)[:5]
    model.set_strategy(0, away, "averaging")
    model.set_strategy(0, away, "qlearning")
    assert learners.n_members == n
    members = model.sellers.member[model.sellers.strategy == q]
    assert sorted(members) == list(range(n))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"side": 2, "traders": [0], "strategy": "averaging"}, "side must be"),
    ({"side": "seller", "traders": [30], "strategy": "averaging"}, "traders must be indices"),
    ({"side": "seller", "traders": [1, 1], "strategy": "averaging"}, "must not repeat"),
    ({"side": "seller", "traders": [0.5], "strategy": "averaging"}, "integers"),
    ({"side": "seller", "traders": [0], "strategy": 7}, "index in 0..1"),
    ({"side": "seller", "traders": [0], "strategy": "no-such"}, "unknown strategy"),
    ({"side": "seller", "traders": [0, 1], "strategy": "qlearning", "like": [2]},
     "one trader per mover"),
    ({"side": "seller", "traders": [0], "strategy": "hardliner", "like": [2]}, "none does"),
])
def test_bad_switches_are_refused_and_change_nothing(kwargs, message):
    model = MarketModel(**MARKET)
    before = model.sellers.strategy.copy(), list(model.market.names[0])
    with pytest.raises(ValueError, match=message):
        model.set_strategy(**kwargs)
    assert np.array_equal(model.sellers.strategy, before[0])
    assert model.market.names[0] == before[1]


def test_a_strategy_without_a_compiled_decision_cannot_join_a_compiled_market():
    model = MarketModel(**MARKET)
    with pytest.raises(ValueError, match="engine='lockstep'"):
        model.set_strategy(0, [0], "negmas:BoulwareTBNegotiator")


@pytest.mark.parametrize("kwargs, words", [
    ({"side": 0.5}, "side must be 0"),
    ({"side": True}, "side must be 0"),
    ({"strategy": 1.7}, "integer index"),
    ({"strategy": True}, "integer index"),
    ({"strategy": " qlearning"}, "without surrounding spaces"),
])
def test_set_strategy_checks_its_arguments_as_the_command_line_does(kwargs, words):
    model = MarketModel(n_sellers=6, n_buyers=6, seed=0,
                        seller_mix={"averaging": 0.5, "qlearning": 0.5})
    call = {"side": "seller", "traders": [0], "strategy": "qlearning", **kwargs}
    with pytest.raises(ValueError, match=words):
        model.set_strategy(**call)
    assert model.market.names[0] == ["averaging", "qlearning"]  # nothing added


def test_earnings_count_for_the_strategy_that_earned_them():
    """A trader that changes strategy brings none of its past earnings to the new one: the
    market's table summed a Boulware trader's averaging years into Boulware's mean."""
    model = MarketModel(n_sellers=12, n_buyers=12, seller_mix={"averaging": 0.5,
                                                               "boulware": 0.5}, seed=4)
    for _ in range(12):
        model.step()
    book = model.sellers
    movers = np.flatnonzero(book.strategy == 0)[:3]  # averaging traders, with earnings
    before = book.earnings[movers].copy()
    assert before.sum() > 0
    model.set_strategy("seller", movers, "boulware")
    for _ in range(12):
        model.step()
    earned = book.earned_under(2)
    assert earned.sum() == pytest.approx(book.earnings.sum())  # every unit of money, once
    stayed = book.strategy == 0
    assert earned[0] == pytest.approx(book.earnings[stayed].sum() + before.sum())
    under = book.earnings[movers] - before  # what the movers made as Boulware traders
    boulware = book.strategy == 1
    figures = model.datacollector.get_model_vars_dataframe().iloc[-1]
    mean = (book.earnings[boulware & ~np.isin(np.arange(len(book)), movers)].sum()
            + under.sum()) / boulware.sum()
    assert figures["earnings.seller.boulware"] == pytest.approx(mean)
    assert figures["earnings.seller"] == pytest.approx(book.earnings.mean())  # the side: all
