"""The continuous double auction and the call market (``institution``): their book rules as
tables of expected trades, and what a user relies on around them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from market.sim import population
from market.sim.model import MarketModel

#: a rule that quotes its own reservation level and takes any acceptable offer: what it
#: quotes is known, so the book's rules can be read off the trades; and the same rule
#: stating ``respond`` (which does nothing), which the contract and the engine take as they
#: take ZIP's
TRUTHFUL = '''
from strategies.rule_based import RuleBased


class Truthful(RuleBased):
    name = "truthful"

    @staticmethod
    def target(turn, rng):
        return turn.lo if turn.side == 0 else turn.hi


class Listener(Truthful):
    name = "listener"

    @staticmethod
    def respond(side, event, member, limit, active, st, g, rng):
        return
'''


@pytest.fixture(scope="module")
def truthful(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("rules") / "truthful.py"
    path.write_text(TRUTHFUL)
    return f"{path}:Truthful"


def one_step(institution: str, spec: str, costs: list[float], values: list[float],
             order_seed: int) -> pd.DataFrame:
    """One step of a market of ``spec`` traders with these costs and values (P = 11 levels
    on 0..100: level k is price 10 (k - 1)), its generator seeded ``order_seed`` just
    before the step; the step's trades as (seller, buyer, maker, level) rows."""
    m = MarketModel(institution=institution, n_sellers=len(costs), n_buyers=len(values),
                    prices=11, period=2, seller_mix={spec: 1}, buyer_mix={spec: 1}, seed=0)
    mk = m.market
    mk.books[0].reservation[:] = costs
    mk.books[1].reservation[:] = values
    mk.levels = population.acceptable_levels(mk.grid, *mk.books)
    m.rng = np.random.default_rng(order_seed)
    m.step()
    f = m.last_step.frame()
    n_s = len(costs)
    return pd.DataFrame({"seller": f.seller_id - 1, "buyer": f.buyer_id - 1 - n_s,
                         "maker": f["first"], "level": f.level})


def order(seed: int, n: int) -> list[int]:
    """The activation order a step draws first: places 0.. are Sellers, then Buyers."""
    return np.random.default_rng(seed).permutation(n).tolist()


# Each case: costs, values, the generator's seed, the activation order it gives (checked),
# and the trades the book's rules make, as (seller, buyer, maker, level).
CDA_CASES = [
    # B1 bids 7, B0 bids 9; S1 takes the best bid (9, B0's: the standing quote's price),
    # then S0 the best left (7)
    ([20, 40], [80, 60], 3, [3, 2, 1, 0], [(1, 0, "buyer", 9), (0, 1, "buyer", 7)]),
    # equal bids: the one that stood longest (B1's, placed first) trades first
    ([20, 40], [60, 60], 3, [3, 2, 1, 0], [(1, 1, "buyer", 7), (0, 0, "buyer", 7)]),
]


@pytest.mark.parametrize(("costs", "values", "seed", "expected_order", "trades"),
                         CDA_CASES)
def test_cda_trades_at_the_standing_quote_with_time_priority(truthful, costs, values, seed,
                                                              expected_order, trades):
    assert order(seed, 4) == expected_order
    got = one_step("cda", truthful, costs, values, seed)
    assert list(got.itertuples(index=False, name=None)) == trades


def test_cda_a_crossing_quote_trades_at_the_makers_level(truthful):
    """Whatever the order, every trade is at its maker's quote, which a truthful trader puts
    at its own reservation level; nobody trades twice in a period."""
    costs, values = [20, 40, 10], [80, 60, 30]
    level_of = {("seller", i): k for i, k in enumerate([3, 5, 2])}
    level_of.update({("buyer", i): k for i, k in enumerate([9, 7, 4])})
    for seed in range(12):
        got = one_step("cda", truthful, costs, values, seed)
        for s, b, maker, level in got.itertuples(index=False, name=None):
            assert level == level_of[(maker, s if maker == "seller" else b)]
        assert got.seller.is_unique and got.buyer.is_unique


def test_call_market_clears_at_one_price_in_the_middle_of_the_clearing_band(truthful):
    # bids 9, 7 and asks 3, 5: two units clear; any level in [5, 7] clears exactly two, the
    # call takes the middle, 6; the highest bid trades with the lowest ask
    got = one_step("call", truthful, [20, 40], [80, 60], 3)
    assert sorted(got.itertuples(index=False, name=None)) == [
        (0, 0, "seller", 6), (1, 1, "seller", 6)]
    # bids 9, 4 and asks 3, 5: one unit; band [max(3, 4), min(9, 5)] = [4, 5] -> 4
    got = one_step("call", truthful, [20, 40], [80, 30], 3)
    assert list(got.itertuples(index=False, name=None)) == [(0, 0, "seller", 4)]


@pytest.mark.parametrize("institution", ["cda", "call"])
def test_the_same_seed_gives_the_same_tables(institution):
    def run() -> tuple[pd.DataFrame, dict]:
        m = MarketModel(institution=institution, seller_mix={"zi-c": 0.5, "linear": 0.5},
                        buyer_mix={"zi-c": 0.5, "averaging": 0.5}, prices=20, seed=4)
        for _ in range(25):
            m.step()
        return m.datacollector.get_model_vars_dataframe(), m.summary()

    (a, sa), (b, sb) = run(), run()
    pd.testing.assert_frame_equal(a, b)
    assert sa == sb


@pytest.mark.parametrize("institution", ["cda", "call"])
def test_zi_c_traders_reach_gode_and_sunders_efficiency(institution):
    """Gode and Sunder (1993): zero-intelligence traders who cannot trade at a loss reach
    97-99% allocative efficiency in a double auction. Medians over seeds here: about 0.96
    in the CDA, 0.95 in the call market (drawn values, 50 + 50 traders, 100 levels)."""
    eff = []
    for seed in range(5):
        m = MarketModel(institution=institution, seller_mix={"zi-c": 1}, buyer_mix={"zi-c": 1},
                        prices=100, seed=seed)
        for _ in range(50):
            m.step()
        eff.append(m.summary()["efficiency"])
        assert all(m.market.books[0].earnings >= 0) and all(m.market.books[1].earnings >= 0)
    assert np.median(eff) > 0.9


def test_the_market_refuses_what_cannot_quote_on_a_book():
    with pytest.raises(ValueError, match="'negmas' cannot play in institution cda"):
        MarketModel(institution="cda", buyer_mix={"negmas": 1})
    with pytest.raises(ValueError, match="lockstep"):
        MarketModel(institution="call", engine="lockstep")


def test_a_python_strategy_cannot_join_a_book_by_set_strategy():
    m = MarketModel(institution="cda", n_buyers=6, n_sellers=6, seed=0)
    with pytest.raises(ValueError, match="'negmas' cannot play in institution cda"):
        m.set_strategy("buyer", [0, 1], "negmas")
    m.set_strategy("buyer", [0, 1], "zip")  # a compiled strategy joins, and plays
    m.step()
    assert list(m.market.names[1]) == ["averaging", "zip"]


@pytest.mark.parametrize("institution", ["cda", "call"])
def test_learners_learn_from_the_trades_they_make_on_a_book(institution):
    """A Q-learner quotes from its table (its state: the best opposite quote and the step,
    counted up to the game's rounds) and learns from each of its trades as from a
    negotiation of two moves: one update per trade, the reward its surplus."""
    m = MarketModel(institution=institution, seller_mix={"qlearning": 1},
                    buyer_mix={"zi-c": 1}, n_buyers=30, n_sellers=30, seed=5)
    learner = m.market.strategies[0][0]
    before = learner.tables.copy()
    for _ in range(30):
        m.step()
    trades = int(m.sellers.trades.sum())
    assert trades > 0 and int(learner.played.sum()) == trades
    assert not np.array_equal(before, learner.tables)


@pytest.mark.parametrize("institution", ["cda", "call"])
def test_revision_and_common_wallets_work_on_a_book(institution):
    m = MarketModel(institution=institution, seller_mix={"zi-c": 0.5, "kaplan": 0.5},
                    buyer_mix={"zip": 0.5, "averaging": 0.5}, teams=5, common_wallet=True,
                    revision="imitate", revision_rate=0.5, period=2, seed=2)
    for _ in range(20):
        m.step()
    shares = m.datacollector.get_table_dataframe("shares")
    assert len(shares) > 0 and m.market.switches[0] + m.market.switches[1] > 0
    wallets = m.market.team_wallets()
    earned = sum(b.earnings.sum() for b in m.market.books)
    assert wallets.sum() == pytest.approx(earned)  # pooled, nothing lost


def test_a_users_rule_that_states_respond_plays_on_a_book(truthful):
    listener = truthful.replace(":Truthful", ":Listener")
    m = MarketModel(institution="cda", seller_mix={listener: 1},
                    buyer_mix={"zi-c": 1}, n_buyers=10, n_sellers=10, seed=0)
    for _ in range(5):
        m.step()
    assert m.summary()["deals"] > 0


@pytest.mark.parametrize("agent_data", ["period", "none"])
@pytest.mark.parametrize("institution", ["cda", "call"])
def test_the_tape_shows_the_previous_periods_lowest_and_highest_trade(institution, agent_data):
    """What a rule reads as ``prior_low`` and ``prior_high``: the extreme levels traded in the
    period before, whether the model opened the period (agent data collected at a period's
    end stops a compiled call there) or a compiled call ran on into it."""
    from market.sim.auction import PRIOR_HIGH, PRIOR_LOW

    m = MarketModel(institution=institution, prices=21, period=5, n_sellers=20, n_buyers=20,
                    seller_mix={"zi-c": 1}, buyer_mix={"zi-c": 1}, seed=4,
                    agent_data=agent_data)
    tape = m.market.book[7]

    def levels(period: int) -> tuple[int, int]:
        prices = m.datacollector.get_table_dataframe("prices")
        lv = prices.loc[prices["period"] == period, "level"]
        return int(lv.min()), int(lv.max())

    assert (tape[PRIOR_LOW], tape[PRIOR_HIGH]) == (0, 0)  # the first period: none known
    m.run(6)
    assert (tape[PRIOR_LOW], tape[PRIOR_HIGH]) == levels(0)
    m.run(10)
    assert m.period == 3
    assert (tape[PRIOR_LOW], tape[PRIOR_HIGH]) == levels(2)
    assert levels(2) != levels(0)  # a test that could tell the periods apart
