"""Who trades: counts from shares, strategies and learning parameters, values, costs, teams."""

from __future__ import annotations

import numpy as np
import pytest

from market.game import qtable
from market.sim import population
from market.sim.model import MarketModel
from market.sim.params import check, check_mix

MIXED = {"averaging": 0.5, "qlearning": 0.5}



def test_mix_counts_follow_the_shares():
    model = MarketModel(n_buyers=10, n_sellers=9, buyer_mix={"averaging": 0.3, "qlearning": 0.7},
                        seller_mix=MIXED, seed=0)
    buyers = model.market.agents_now().query("side == 'buyer'")["strategy"].value_counts()
    sellers = model.market.agents_now().query("side == 'seller'")["strategy"].value_counts()
    assert buyers.to_dict() == {"qlearning": 7, "averaging": 3}
    assert sorted(sellers.tolist()) == [4, 5]  # 4.5 each, the remainder to one of them


def test_shares_a_hair_over_one_never_make_more_traders_than_asked():
    # 1.0000009 passes the sum-to-1 check; unnormalised it made 2,000,001 labels
    mix = check_mix("buyer_mix", {"averaging": 1.0000009})
    labels, counts = population.assign(mix, 2_000_000, np.random.default_rng(0))
    assert labels.size == 2_000_000 and counts.tolist() == [2_000_000]


def test_largest_remainder_counts_are_fixed_and_only_who_plays_what_is_drawn():
    mix = {"a": 0.25, "b": 0.4, "c": 0.35}
    draws = [population.assign(mix, 7, np.random.default_rng(seed)) for seed in range(5)]
    # 1.75, 2.8, 2.45 -> floors 1, 2, 2 and the two largest remainders (b .8, a .75) get one more
    assert all(counts.tolist() == [2, 3, 2] for _, counts in draws)
    assert all(np.bincount(labels).tolist() == [2, 3, 2] for labels, _ in draws)
    assert len({labels.tobytes() for labels, _ in draws}) > 1


@pytest.mark.parametrize("dist", ["uniform", "normal", "triangular"])
def test_values_and_costs_stay_in_their_ranges(dist):
    p = check({"value_range": (60.0, 90.0), "cost_range": (10.0, 30.0), "value_dist": dist,
               "cost_dist": dist})
    rng = np.random.default_rng(1)
    values = population.draw(p, 1, 5000, rng)
    costs = population.draw(p, 0, 5000, rng)
    assert values.min() >= 60 and values.max() <= 90 and costs.min() >= 10 and costs.max() <= 30
    if dist != "uniform":  # centred shapes: the middle third holds more than a third
        assert np.mean(np.abs(values - 75) < 5) > 0.4


def test_a_distribution_function_is_clipped_and_must_give_one_number_per_trader():
    p = check({"value_dist": lambda rng, n, lo, hi: np.full(n, hi + 50.0)})
    assert (population.draw(p, 1, 4, np.random.default_rng(0)) == 100.0).all()
    bad = check({"cost_dist": lambda rng, n, lo, hi: np.zeros(n + 1)})
    with pytest.raises(ValueError, match="return 3 numbers"):
        population.draw(bad, 0, 3, np.random.default_rng(0))


def test_teams_are_balanced_per_side_and_sellers_come_first():
    model = MarketModel(n_buyers=9, n_sellers=7, teams=3, seed=2)
    assert len(model.market.team_size) == 6
    assert sorted(np.bincount(model.sellers.team).tolist()) == [2, 2, 3]
    assert np.bincount(model.buyers.team - 3).tolist() == [3, 3, 3]
    alone = MarketModel(n_buyers=4, n_sellers=3, seed=2)
    assert alone.sellers.team.tolist() == [0, 1, 2] and alone.buyers.team.tolist() == [3, 4, 5, 6]


def test_drawn_learning_parameters_differ_per_agent():
    model = MarketModel(n_buyers=30, n_sellers=30, buyer_mix={"qlearning": 1.0},
                        learner_params="drawn", seed=0)
    learner = model.market.strategies[1][0]
    assert np.unique(learner.lr).size == 30 and np.unique(learner.gamma).size == 30


def test_learners_can_start_from_a_saved_table(tmp_path):
    """``qlearning:FILE.npz`` in a mix: every member starts from the file's table for its side."""
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    proto = Protocol(5, 5)
    rng = np.random.default_rng(0)
    pair = TablePair(proto, rng.random((2, qtable.n_rows(proto), proto.n_actions)),
                     rng.random((2, qtable.n_rows(proto), proto.n_actions)))
    path = tmp_path / "q.npz"
    save_tables(path, pair)
    spec = f"qlearning:{path}"
    model = MarketModel(n_buyers=6, n_sellers=4, buyer_mix={spec: 1.0},
                        seller_mix={"averaging": 0.5, spec: 0.5}, seed=0)
    buyers, sellers = model.market.strategies[1][0], model.market.strategies[0][1]
    assert np.array_equal(buyers.tables[3], pair.buyer)
    assert np.array_equal(sellers.tables[1], pair.seller)
    model.step()
    assert model.market.agents_now()["strategy"].str.startswith("qlearning:").sum() == 8
    with pytest.raises(ValueError, match="takes nothing after .*qlearning:FILE.npz"):
        MarketModel(buyer_mix={f"averaging:{path}": 1.0})
