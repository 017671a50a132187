"""Settling a step: money changes hands for every deal, rewards are gains, pooled per team."""

from __future__ import annotations

import numpy as np
import pytest
import settled  # tests/support, on pytest's pythonpath

from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER
from market.sim import exchange
from market.sim.agents import TraderArrays

N = 40


def _books(rng: np.random.Generator, teams: int = 4) -> tuple[TraderArrays, TraderArrays]:
    def side(s: int, lo: float, hi: float) -> TraderArrays:
        return TraderArrays(s, rng.uniform(lo, hi, N), np.zeros(N, dtype=np.int64),
                            np.arange(N), s * teams + np.arange(N) % teams)

    return side(SELLER, 0, 50), side(BUYER, 50, 100)


def test_every_deal_moves_money_and_uses_up_both_units(duel):
    rng = np.random.default_rng(5)
    books = _books(rng)
    grid = PriceGrid(0.0, 100.0, 5)
    record = duel("zi-c", "zi-c", n=N, seed=2, seller_range=(3, 5), buyer_range=(1, 3))
    ps, pb = rng.permutation(N), rng.permutation(N)
    s = settled.settle(books, ps, pb, record, grid)
    deal = record.level > 0
    assert deal.any() and not deal.all()
    assert np.array_equal(s.deal, deal)
    assert np.isnan(s.prices[~deal]).all()
    assert np.array_equal(s.deal_prices, grid.price(record.level[deal]))
    S, B = books
    assert S.cash.sum() == pytest.approx(-B.cash.sum()) == pytest.approx(s.deal_prices.sum())
    assert np.array_equal(S.earnings[ps[deal]], s.deal_prices - S.reservation[ps[deal]])
    assert np.array_equal(B.earnings[pb[deal]], B.reservation[pb[deal]] - s.deal_prices)
    assert S.traded.sum() == B.traded.sum() == S.trades.sum() == deal.sum()
    assert not S.traded[ps[~deal]].any() and B.earnings[pb[~deal]].sum() == 0


def test_rewards_are_gains_over_the_price_range_pooled_per_team_under_a_common_wallet(duel):
    rng = np.random.default_rng(6)
    books = _books(rng)
    record = duel("zi-c", "zi-c", n=N, seed=3, seller_range=(3, 5), buyer_range=(1, 3))
    ps, pb = np.arange(N), rng.permutation(N)
    s = settled.settle(books, ps, pb, record, PriceGrid(0.0, 100.0, 5))
    own = s.rewards(books, ps, pb, 100.0)
    assert np.array_equal(own[SELLER, s.deal], s.seller_gain / 100.0)
    assert (own[:, ~s.deal] == 0).all()
    team_size = np.bincount(np.concatenate([b.team for b in books]))
    pooled = s.rewards(books, ps, pb, 100.0, team_size)
    S, B = books
    for team in range(8):
        members = np.concatenate([pooled[SELLER][S.team[ps] == team],
                                  pooled[BUYER][B.team[pb] == team]])
        total = (own[SELLER][S.team[ps] == team].sum() + own[BUYER][B.team[pb] == team].sum())
        assert np.allclose(members, total / team_size[team])


class _Learner:
    """Records what it was taught."""

    classifier = {"learns": True}

    def __init__(self) -> None:
        self.calls: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def learn(self, record, rows, member, reward, time_left=None) -> None:
        self.calls.append((rows, member, reward))


class _Still:
    classifier = {"learns": False}

    def learn(self, *args, **kwargs) -> None:
        raise AssertionError("a strategy that does not learn is never taught")


def test_each_learning_population_learns_from_its_own_members_rows(duel):
    rng = np.random.default_rng(7)
    books = _books(rng)
    books[BUYER].strategy[:] = np.arange(N) % 2  # buyers: still, learner, still, ...
    books[BUYER].member[:] = np.arange(N) // 2
    record = duel("zi-c", "zi-c", n=N, seed=4)
    ps, pb = np.arange(N), rng.permutation(N)
    reward = rng.random((2, N))
    learner = _Learner()
    exchange.learn(([_Still()], [_Still(), learner]), books, ps, pb, record, reward, None)
    ((rows, member, got),) = learner.calls
    assert (pb[rows] % 2 == 1).all() and rows.size == N // 2
    assert np.array_equal(member, pb[rows] // 2) and np.array_equal(got, reward[BUYER, rows])
