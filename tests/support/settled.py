"""A step settled as the engines settle it (``exchange.settle_deals``), kept whole for tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from market.game.grid import PriceGrid
from market.game.record import BatchRecord
from market.sim import exchange, ledger


@dataclass(frozen=True)
class Settled:
    """One step's negotiations, settled: each pair's price (NaN without a deal), whether it
    dealt, the gains (one per deal, in pair order) and each deal's cost and value."""

    deal: np.ndarray
    prices: np.ndarray
    seller_gain: np.ndarray
    buyer_gain: np.ndarray
    costs: np.ndarray
    values: np.ndarray

    @property
    def deal_prices(self) -> np.ndarray:
        return self.prices[self.deal]

    def sums(self, centre: float) -> tuple:
        """What the ledger enters of it (``ledger.settle_sums``) about ``centre``."""
        return ledger.settle_sums(self.prices, self.seller_gain, self.buyer_gain, self.costs,
                                  self.values, centre)

    def rewards(self, books: Sequence, ps: np.ndarray, pb: np.ndarray, span: float,
                team_size: np.ndarray | None = None) -> np.ndarray:
        """``exchange.pay``: (2, pairs) rewards by side."""
        S, B = books
        sizes = np.zeros(0, dtype=np.int64) if team_size is None else np.asarray(team_size)
        return exchange.pay(self.deal, self.seller_gain, self.buyer_gain, span, S.team[ps],
                            B.team[pb], sizes)


def settle(books: Sequence, ps: np.ndarray, pb: np.ndarray, record: BatchRecord,
           grid: PriceGrid) -> Settled:
    """``exchange.settle_deals`` on both sides' arrays (changed in place)."""
    S, B = books
    prices, deal, gain_s, gain_b = exchange.settle_deals(
        ps, pb, record.level, record.n_moves, (grid.lo, grid.step, grid.hi - grid.lo),
        record.protocol.pressure, S.ledger_arrays, B.ledger_arrays)
    return Settled(deal, prices, gain_s, gain_b, S.reservation[ps[deal]],
                   B.reservation[pb[deal]])
