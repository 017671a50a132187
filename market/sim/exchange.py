"""After the negotiations of a step: deals change hands, and learners are paid.

:func:`settle` moves money between the paired traders' arrays for every
deal (cash, earnings, units traded) and returns the
:class:`~market.sim.ledger.Settlement` the ledger enters. :func:`rewards`
turns the gains into each learner's reward (a share of the price range,
pooled per team under a common wallet), and :func:`learn` hands every
learning population the rows it played. All of it is array arithmetic over
the step's pairs: no per-trader Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from market.game.grid import PriceGrid
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER
from market.sim.agents import TraderArrays
from market.sim.ledger import Settlement
from strategies.base import Strategy


def settle(books: Sequence[TraderArrays], ps: np.ndarray, pb: np.ndarray, record: BatchRecord,
           grid: PriceGrid) -> Settlement:
    """Pay every deal of pairs (``ps[i]``, ``pb[i]``) at its price; each dealer's unit is traded."""
    S, B = books[SELLER], books[BUYER]
    deal = record.level > 0
    prices = np.where(deal, grid.price(np.maximum(record.level, 1)), np.nan)
    ds, db, p = ps[deal], pb[deal], prices[deal]
    gain_s = p - S.reservation[ds]
    gain_b = B.reservation[db] - p
    S.cash[ds] += p
    B.cash[db] -= p
    S.earnings[ds] += gain_s
    B.earnings[db] += gain_b
    S.trades[ds] += 1
    B.trades[db] += 1
    S.traded[ds] = True
    B.traded[db] = True
    return Settlement(record, deal, prices, gain_s, gain_b)


def rewards(s: Settlement, books: Sequence[TraderArrays], ps: np.ndarray, pb: np.ndarray,
            span: float, team_size: np.ndarray | None = None) -> np.ndarray:
    """(2, pairs) rewards by side: the gain over the price range ``span``, 0 without a deal.

    ``team_size`` (a common wallet): each trader gets its team's reward of
    the step per member instead of its own.
    """
    reward = np.zeros((2, len(ps)))
    reward[SELLER, s.deal] = s.seller_gain / span
    reward[BUYER, s.deal] = s.buyer_gain / span
    if team_size is not None:
        S, B = books[SELLER], books[BUYER]
        teams = np.concatenate([S.team[ps], B.team[pb]])
        pooled = np.bincount(teams, weights=reward.ravel(), minlength=len(team_size))
        share = pooled / np.maximum(team_size, 1)
        reward[SELLER] = share[S.team[ps]]
        reward[BUYER] = share[B.team[pb]]
    return reward


def learn(populations: Sequence[Sequence[Strategy]], books: Sequence[TraderArrays],
          ps: np.ndarray, pb: np.ndarray, record: BatchRecord, reward: np.ndarray,
          time_left: np.ndarray | None) -> None:
    """Every learning population of each side learns from the rows its members played."""
    for side, idx in ((SELLER, ps), (BUYER, pb)):
        book = books[side]
        group = book.strategy[idx]
        for g, strat in enumerate(populations[side]):
            if not strat.classifier.get("learns", False):
                continue
            rows = np.flatnonzero(group == g)
            if rows.size == 0:
                continue
            member = book.member[idx[rows]]
            strat.learn(record, rows, member, reward[side, rows],
                        None if time_left is None else time_left[rows])
