"""The last step's negotiations, for a person to look at: who met whom, and what was said.

The model keeps the last step's pairs (indices into each side's arrays),
their batch record and prices as :class:`LastStep` (``model.last_step``);
from it come the pairs table and, for one pair, a :class:`PairTrace` with
the two Mesa agents and the moves in money.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from market.game.grid import PriceGrid
from market.game.record import BatchRecord, NegotiationRecord
from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim.agents import Buyer, Seller, Trader
from market.sim.state import Market


@dataclass
class PairTrace:
    """One negotiation of the last step: who met whom, and what was said (for the view)."""

    seller: Seller
    buyer: Buyer
    record: NegotiationRecord
    grid: PriceGrid

    @property
    def price(self) -> float | None:
        """The deal price in money, None without a deal."""
        level = self.record.deal_level
        return None if level is None else float(self.grid.price(level))

    def moves(self) -> list[dict[str, Any]]:
        """The moves as rows: move, side, action, level, price (money; NaN for reject)."""
        return [
            {
                "move": m.move,
                "side": m.side,
                "action": m.action,
                "level": m.level,
                "price": float(self.grid.price(m.level)) if m.level > 0 else math.nan,
            }
            for m in self.record.moves
        ]


@dataclass(frozen=True)
class LastStep:
    """The pairs of one step: Seller and Buyer indices, their record, each pair's price.

    ``record`` is None when nobody met; ``prices`` is NaN where a pair did not
    deal. ``market`` and ``agents`` (the Mesa agents by side) are where the
    pairs' traders are read.
    """

    market: Market
    agents: tuple[Sequence[Seller], Sequence[Buyer]]
    sellers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    buyers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    record: BatchRecord | None = None
    prices: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.sellers)

    def after(self, done: Any) -> LastStep:
        """The pairs of the step ``done`` (the engine's result of it), in the same market."""
        return LastStep(self.market, self.agents, done.sellers, done.buyers, done.record,
                        done.prices)

    def frame(self) -> pd.DataFrame:
        """Ids, strategies, first mover, rounds used, deal level and price of every pair."""
        ps, pb, rec, books = self.sellers, self.buyers, self.record, self.market.books
        uid, names = self.market.uid, self.market.name_arrays()
        cols: dict[str, Any] = {
            "seller_id": uid[SELLER][ps],
            "buyer_id": uid[BUYER][pb],
            "seller_strategy": names[SELLER][books[SELLER].strategy[ps]],
            "buyer_strategy": names[BUYER][books[BUYER].strategy[pb]],
        }
        if rec is None:  # nobody met: same columns, no rows
            cols.update(first=np.zeros(0, dtype=object), rounds_used=np.zeros(0, dtype=np.int64),
                        level=np.zeros(0, dtype=np.int64), price=np.zeros(0))
            return pd.DataFrame(cols)
        cols.update(
            first=np.array(SIDE_NAMES, dtype=object)[rec.first.astype(np.intp)],
            rounds_used=rec.rounds_used,
            level=rec.level,
            price=self.prices,
        )
        return pd.DataFrame(cols)

    def trace(self, pair: int = 0) -> PairTrace | None:
        """The negotiation record of pair ``pair`` (None if no pair met)."""
        if self.record is None or len(self) == 0:
            return None
        if not 0 <= pair < len(self):
            raise ValueError(f"pair must be in [0, {len(self) - 1}] (got {pair})")
        sellers, buyers = self.agents
        return PairTrace(sellers[int(self.sellers[pair])], buyers[int(self.buyers[pair])],
                         self.record.negotiation(pair), self.market.grid)

    def trace_of(self, agent: Trader) -> PairTrace | None:
        """The negotiation of ``agent``, None if it did not negotiate."""
        where = np.flatnonzero((self.sellers if agent.side == SELLER else self.buyers)
                               == agent.index)
        return self.trace(int(where[0])) if where.size else None
