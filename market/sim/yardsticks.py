"""Market yardsticks: competitive equilibrium, allocative efficiency, surplus split.

Each trader holds one unit per period (Gode and Sunder's markets), so demand
is the Buyers' values sorted from high to low and supply the Sellers' costs
sorted from low to high. With ``v_1 >= v_2 >= ...`` and ``c_1 <= c_2 <= ...``
the competitive quantity ``Q`` is the largest ``k`` with ``v_k >= c_k`` (the
units that can trade without loss; a tie ``v_k == c_k`` is a zero-surplus
unit and counts), and every price in

    [max(c_Q, v_{Q+1}), min(v_Q, c_{Q+1})]

clears the market: the Q most eager Buyers want to buy, the Q cheapest
Sellers want to sell, and nobody beyond them strictly wants to trade. The
band is never empty. When the curves do not cross (``v_1 < c_1``) the
quantity is 0 and the band is the gap ``[v_1, c_1]`` where nobody trades.
The maximum achievable surplus is ``sum_{k <= Q} (v_k - c_k)``; allocative
efficiency is the realised surplus over it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Equilibrium:
    """Competitive equilibrium of one period: quantity, price band, surplus."""

    quantity: int
    price_lo: float
    price_hi: float
    max_surplus: float

    @property
    def price_mid(self) -> float:
        return (self.price_lo + self.price_hi) / 2.0

    def contains(self, price: float) -> bool:
        return self.price_lo <= price <= self.price_hi


def competitive_equilibrium(values: np.ndarray, costs: np.ndarray) -> Equilibrium:
    """Where demand (``values``) and supply (``costs``) cross, one unit per trader.

    An empty side gives quantity 0, surplus 0 and an undefined (NaN) band:
    there is no market to clear.
    """
    v = np.sort(np.asarray(values, dtype=float))[::-1]
    c = np.sort(np.asarray(costs, dtype=float))
    if v.size == 0 or c.size == 0:
        return Equilibrium(0, math.nan, math.nan, 0.0)
    k = min(v.size, c.size)
    gain = v[:k] - c[:k]  # non-increasing in k
    q = int(np.count_nonzero(gain >= 0))
    v_next = v[q] if q < v.size else -math.inf  # the most eager Buyer left out
    c_next = c[q] if q < c.size else math.inf  # the cheapest Seller left out
    if q == 0:
        lo, hi = float(v[0]), float(c[0])
    else:
        lo = float(max(c[q - 1], v_next))
        hi = float(min(v[q - 1], c_next))
    return Equilibrium(q, lo, hi, float(gain[:q].sum()))


def supply_demand(values: np.ndarray, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step curves: demand prices (values, high to low) and supply prices (costs, low to high).

    Unit ``k`` (1-based) of the demand curve is bought at any price up to
    ``demand[k-1]``; unit ``k`` of supply is sold at any price from
    ``supply[k-1]``.
    """
    return np.sort(np.asarray(values, dtype=float))[::-1], np.sort(np.asarray(costs, dtype=float))


def efficiency(realised_surplus: float, max_surplus: float) -> float:
    """Realised over maximum surplus; NaN when no surplus was to be had.

    In ``[0, 1]`` whenever every trade is individually rational: each trader
    trades at most one unit per period, so the deals form a matching of
    Buyers to Sellers, and no matching of non-negative gains beats the
    sorted one.
    """
    if max_surplus <= 0:
        return math.nan
    return float(realised_surplus / max_surplus)


def surplus_split(buyer_surplus: float, seller_surplus: float) -> tuple[float, float]:
    """Shares of the realised surplus going to Buyers and to Sellers (NaN, NaN if none)."""
    total = buyer_surplus + seller_surplus
    if total == 0:
        return math.nan, math.nan
    return float(buyer_surplus / total), float(seller_surplus / total)
