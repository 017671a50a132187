"""The last step's negotiations, for a person to look at: who met whom, and what was said.

The model keeps the last step's pairs (indices into each side's arrays),
their batch record and prices as :class:`LastStep` (``model.last_step``);
from it come the pairs table and, for one pair, a :class:`PairTrace` with
the two Mesa agents and the moves in money.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from market.game.grid import PriceGrid
from market.game.record import BatchRecord, NegotiationRecord
from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim.agents import Buyer, Seller, Trader
from market.sim.state import Market

#: the pairs of a step nobody met in (read-only: every such step shares them)
_NOBODY = np.zeros(0, dtype=np.int64)
_NOBODY.flags.writeable = False
_NO_PRICES = np.zeros(0)
_NO_PRICES.flags.writeable = False


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


@dataclass  # (not frozen: a frozen one cost 0.3 us more to make, at every step)
class LastStep:
    """The pairs of one step: Seller and Buyer indices, their record, each pair's price.

    ``record`` is None when nobody met; ``prices`` is NaN where a pair did not
    deal. ``market`` and ``agents`` (the Mesa agents by side) are where the
    pairs' traders are read; ``made`` is what the engine keeps of the step
    (:attr:`~market.sim.engine.StepResult.last`), whose ``result`` is read only when
    the pairs are (a run that never looks at them never makes them).
    """

    market: Market
    agents: tuple[Sequence[Seller], Sequence[Buyer]]
    made: Any = None

    @cached_property
    def _done(self) -> Any:
        return None if self.made is None else self.made.result

    @property
    def sellers(self) -> np.ndarray:
        """The Sellers of the pairs (indices into their side's arrays)."""
        return _NOBODY if self._done is None else self._done.sellers

    @property
    def buyers(self) -> np.ndarray:
        """The Buyers of the pairs, in the same order."""
        return _NOBODY if self._done is None else self._done.buyers

    @property
    def record(self) -> BatchRecord | None:
        """The pairs' negotiations (None when nobody met)."""
        return None if self._done is None else self._done.record

    @property
    def prices(self) -> np.ndarray:
        """Each pair's price (NaN where it did not deal)."""
        done = self._done
        return _NO_PRICES if done is None or done.prices is None else done.prices

    def __len__(self) -> int:
        """How many pairs met (read without making their negotiations)."""
        return 0 if self.made is None else self.made.pairs

    def after(self, made: Any) -> LastStep:
        """The pairs of the step ``made`` (the engine's result of it), in the same market."""
        return LastStep(self.market, self.agents, made)

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
