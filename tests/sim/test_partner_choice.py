"""Partner choice in bilateral bargaining (``--matching``): random pairs as they always were,
Weisbuch-Kirman-Herreiner's loyalty as its rules and its mean-field theory say, and bad values
refused in one line."""

from __future__ import annotations

import copy
import math
import warnings

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest

from market.sim import exchange, partner_theory, partners
from market.sim.model import MarketModel
from market.sim.partners import Partners

#: one Buyer (value 100) and two Sellers (cost 0), hardliners, the Buyer opening: every
#: visit is a deal at price 0, a profit of the whole price range (pi = 1) and nothing else
FIXED_PROFIT = dict(n_buyers=1, n_sellers=2, schedule="100;0", first="buyer",
                    buyer_mix={"hardliner": 1.0}, seller_mix={"hardliner": 1.0},
                    matching="loyalty", loyalty_gamma=0.1, period=1, rounds=1, prices=2,
                    agent_data="none")


def _mean_y(beta: float, seeds: int, periods: int = 200, **kw: object) -> tuple[float, float]:
    """The Buyer's order parameter over the second half of each run: mean and sd over seeds."""
    ys = []
    for seed in range(seeds):
        m = MarketModel(**{**FIXED_PROFIT, **kw}, loyalty_beta=beta, seed=seed)
        m.run(periods)
        ys.append(m.datacollector.get_table_dataframe("periods").mean_y.iloc[periods // 2:]
                  .mean())
    return float(np.mean(ys)), float(np.std(ys))


def test_random_pairs_are_one_permutation_of_each_side_as_before():
    m = MarketModel(seed=3, n_buyers=30, n_sellers=20)
    rng = copy.deepcopy(m.rng)
    m.step()
    ps, pb = exchange.pair(np.zeros(20, bool), np.zeros(30, bool), rng)
    last = m.last_step
    assert np.array_equal(last.sellers, ps) and np.array_equal(last.buyers, pb)


def test_random_matching_is_the_default_market_bit_for_bit():
    a, b = MarketModel(seed=5), MarketModel(seed=5, matching="random", loyalty_beta=9.0)
    a.run(30), b.run(30)
    assert a.datacollector.get_model_vars_dataframe().equals(
        b.datacollector.get_model_vars_dataframe())
    assert "mean_y" not in b.datacollector.get_table_dataframe("periods")


def test_a_buyer_with_fixed_profit_searches_below_beta_c_and_is_loyal_above():
    """WKH's transition for two Sellers, judged against the mean field: well below
    ``beta_c = 2 gamma / pi`` the Buyer's y stays near 1/2 (its finite-noise excess, measured
    at 0.05-0.06, under 0.1); well above it, y is the loyal fixed point's within two
    standard deviations over seeds (or 0.02)."""
    bc = partner_theory.beta_c(0.1, 1.0)
    assert bc == pytest.approx(0.2)
    low, _ = _mean_y(0.5 * bc, seeds=8)
    assert 0.5 <= low < 0.6
    for beta in (2 * bc, 3 * bc):
        y, sd = _mean_y(beta, seeds=8)
        assert abs(y - partner_theory.mean_field_y(beta, 0.1, 1.0)) <= max(2 * sd, 0.02)


def test_the_mean_field_fixed_points_solve_wkh_s_equation():
    gamma, pi = 0.1, 1.0
    for beta in (0.25, 0.4, 1.0):
        (gap,) = partner_theory.loyal_gaps(beta, gamma, pi)
        assert gap == pytest.approx(pi / gamma * math.tanh(beta * gap / 2), abs=1e-9)
    assert partner_theory.loyal_gaps(0.19, gamma, pi) == []
    # three Sellers: loyalty appears before searching turns unstable (hysteresis)
    onset, bc = partner_theory.loyal_onset(gamma, pi, 3), partner_theory.beta_c(gamma, pi, 3)
    assert onset < bc == pytest.approx(0.3)
    between = 0.5 * (onset + bc)
    assert partner_theory.mean_field_y(between, gamma, pi, 3) == pytest.approx(1 / 3)
    assert partner_theory.mean_field_y(between, gamma, pi, 3, start="loyal") > 0.5


def test_preferences_decay_take_in_the_period_s_deal_and_forget_the_smallest():
    p = Partners.build("loyalty", 1.0, 0.5, 2, "random", n_sellers=5, n_buyers=1)
    ids, weight, pending, gain, price, odds = p.arrays[:6]
    ids[0], weight[0] = (3, 1), (2.0, 0.5)
    pending[0], gain[0], price[:] = 4, 0.8, 10.0
    partners.new_period(p.rule, p.arrays)  # J <- (1 - 0.5) J + pi; Seller 4 replaces Seller 1
    assert ids[0].tolist() == [3, 4] and weight[0].tolist() == [1.0, 0.8]
    assert pending[0] == -1 and np.isnan(price).all()
    # the period's choice weights: exp(beta J - top), and their sum with the 3 others' exp(-top)
    assert odds[0].tolist() == pytest.approx([1.0, math.exp(-0.2),
                                              1.0 + math.exp(-0.2) + 3 * math.exp(-1.0)])
    pending[0], gain[0] = 3, 0.25
    partners.new_period(p.rule, p.arrays)
    assert weight[0].tolist() == [0.75, 0.4]


def test_a_seller_serves_the_most_loyal_visitor_first_and_then_the_next_while_unsold():
    p = Partners.build("loyalty", 0.0, 0.1, 4, "loyal-first", n_sellers=1, n_buyers=3)
    ids, weight = p.arrays[0], p.arrays[1]
    ids[:, 0], weight[:, 0] = 0, (0.1, 0.5, 0.3)
    s_traded, b_traded = np.zeros(1, bool), np.zeros(3, bool)
    ps, pb, queue = partners.first_round(p.rule, p.arrays, s_traded, b_traded,
                                         np.random.default_rng(0))
    assert ps.tolist() == [0] and pb.tolist() == [1]
    assert partners.next_round(queue, s_traded)[1].tolist() == [2]  # no deal: the next one
    s_traded[0] = True
    assert partners.next_round(queue, s_traded)[0].size == 0  # sold: the rest wait


def test_memory_at_least_the_sellers_is_the_exact_rule_whatever_its_size():
    kw = dict(n_buyers=30, n_sellers=8, matching="loyalty", loyalty_beta=3.0,
              buyer_mix={"zi-c": 0.5, "qlearning": 0.5}, seed=2)
    a, b = MarketModel(**kw, loyalty_memory=8), MarketModel(**kw, loyalty_memory=40)
    a.run(60), b.run(60)
    assert a.datacollector.get_table_dataframe("periods").equals(
        b.datacollector.get_table_dataframe("periods"))


def test_a_bounded_memory_costs_buyers_times_memory_and_still_learns_loyalty():
    m = MarketModel(n_buyers=40, n_sellers=200, matching="loyalty", loyalty_beta=20.0,
                    loyalty_memory=3, seed=1)
    assert m.market.partners.arrays[1].shape == (40, 3)
    m.run(300)
    periods = m.datacollector.get_table_dataframe("periods")
    assert periods.mean_y.iloc[-1] > periods.mean_y.iloc[1]
    assert 0 < periods.loyal_share.iloc[-1] <= 1
    ids = m.market.partners.arrays[0]
    assert ((ids >= -1) & (ids < 200)).all()
    remembered = ids >= 0  # from the left, no empty place before a remembered Seller
    assert (remembered[:, 1:] <= remembered[:, :-1]).all() and remembered.any()


def test_every_strategy_plays_unchanged_under_loyalty_and_the_seed_fixes_the_tables():
    kw = dict(n_buyers=40, n_sellers=30, matching="loyalty", service="loyal-first",
              buyer_mix={"qlearning": 0.4, "zi-c": 0.3, "boulware": 0.3},
              seller_mix={"averaging": 0.5, "qlearning": 0.5}, seed=4)
    a, b = MarketModel(**kw), MarketModel(**kw)
    a.run(50)
    for _ in range(50):
        b.step()
    for name in ("periods",):
        assert a.datacollector.get_table_dataframe(name).equals(
            b.datacollector.get_table_dataframe(name))
    assert a.summary()["deals"] > 0


@pytest.mark.parametrize(("args", "words"), [
    (["--matching", "loyalty", "--institution", "cda"], "--matching loyalty"),
    (["--matching", "loyal"], "--matching must be one of random, loyalty"),
    (["--loyalty-beta", "-1"], "--loyalty-beta must be a number >= 0"),
    (["--loyalty-beta", "inf"], "--loyalty-beta must be a number >= 0"),
    (["--loyalty-gamma", "0"], "--loyalty-gamma must be a number in (0, 1]"),
    (["--loyalty-gamma", "1.5"], "--loyalty-gamma must be a number in (0, 1]"),
    (["--loyalty-memory", "0"], "--loyalty-memory must be an integer"),
    (["--service", "vip"], "--service must be one of random, loyal-first"),
    (["--matching", "loyalty", "--engine", "lockstep"], "runs on the compiled engine"),
    (["--loyal-state"], "--loyal-state shows learners whether a Buyer is loyal to her Seller: "
                        "it needs --matching loyalty"),
])
def test_bad_partner_choice_is_refused_in_one_line(tmp_path, args, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = cli_run.run("market", "--steps", "2", "--out", str(tmp_path / "out"), *args)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_pair_is_loyal_when_the_buyer_prefers_that_seller_with_y_at_least_0_9():
    p = Partners.build("loyalty", 1.0, 0.1, 4, "random", n_sellers=3, n_buyers=3)
    p.prefer(np.array([0]), 2, 1.0)  # Buyer 0: all her preference on Seller 2, y = 1
    p.prefer(np.array([1]), 0, 1.0)  # Buyer 1: y = 1/2 between Sellers 0 and 1
    p.prefer(np.array([1]), 1, 1.0)  # Buyer 2: no deal yet, loyal to nobody
    ps, pb = np.array([2, 1, 0, 1, 0]), np.array([0, 0, 1, 1, 2])
    assert partners.loyal_rows(p.arrays, ps, pb).tolist() == [1, 0, 0, 0, 0]
    p.prefer(np.array([1]), 1, 0.05)  # Buyer 1 now prefers Seller 0: y = 0.91
    assert partners.loyal_rows(p.arrays, ps, pb).tolist() == [1, 0, 1, 0, 0]
    random = Partners.build("random", 1.0, 0.1, 4, "random", n_sellers=3, n_buyers=3)
    assert partners.loyal_rows(random.arrays, ps, pb).tolist() == [0] * 5


def test_learners_with_loyal_state_keep_a_slot_each_way_and_learn_in_both():
    """Kirman and Vriend's question needs Sellers who can price loyal customers apart: with
    ``loyal_state`` each of a Q-learner's slots is two, and both learn in a market where
    some Buyers turn loyal; without it the tables and the market are as they were."""
    kw = dict(n_sellers=10, n_buyers=30, matching="loyalty", loyalty_beta=20.0,
              seller_mix={"qlearning": 1.0}, buyer_mix={"zi-c": 1.0}, seed=3, agent_data="none")
    plain, seeing = MarketModel(**kw), MarketModel(**kw, loyal_state=True)
    plain.run(300), seeing.run(300)
    a, b = plain.market.strategies[0][0], seeing.market.strategies[0][0]
    assert a.tables.shape[1] == 2 and b.tables.shape[1] == 4  # (role, loyal) slots
    learned = np.abs(b.tables).sum(axis=(0, 2, 3))
    assert (learned > 0).all(), learned  # non-loyal and loyal pairs, in both roles
    assert seeing.datacollector.get_table_dataframe("periods").loyal_share.iloc[-1] > 0.3


def test_unequal_profits_give_a_second_stable_point_on_the_worse_seller_above_its_onset():
    """WKH's hysteresis in the mean field: below the onset one fixed point, most visits on the
    better Seller; above it a stable point on the worse one too, which a Buyer who starts
    loyal to it keeps. With equal profits the onset is beta_c = 2 gamma / pi."""
    gamma, profits = 0.1, (0.5, 1.5 / 11)
    onset = partner_theory.worse_onset(gamma, profits)
    below = partner_theory.unequal_fixed_points(0.9 * onset, gamma, profits)
    above = partner_theory.unequal_fixed_points(1.1 * onset, gamma, profits)
    assert len(below) == 1 and below[0][1] and below[0][0] > 0.9
    assert [stable for _, stable in above] == [True, False, True]
    assert above[0][0] < 0.1 < 0.9 < above[2][0]
    for x, _ in above:  # each solves x = P_1(J) with gamma J_j = pi_j P_j
        z = 1.1 * onset / gamma * (profits[0] * x - profits[1] * (1 - x))
        assert x == pytest.approx(1 / (1 + math.exp(-z)), abs=1e-9)
    worse = (0.0, profits[1] / gamma)
    assert partner_theory.settle(2 * onset, gamma, profits, worse) < 0.05
    assert partner_theory.settle(0.5 * onset, gamma, profits, worse) > 0.95
    assert partner_theory.settle(2 * onset, gamma, profits, (0.0, 0.0)) > 0.95
    assert partner_theory.worse_onset(0.1, (1.0, 1.0)) == pytest.approx(
        partner_theory.beta_c(0.1, 1.0), rel=1e-3)
