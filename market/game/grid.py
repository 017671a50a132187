"""The price grid: levels ``1..P`` of the protocol mapped to money.

Level ``k`` is the price ``lo + (k - 1) * (hi - lo) / (P - 1)``. Reservation
prices in money become acceptable level ranges: a Seller with cost ``c``
accepts levels whose price is at least ``c``, a Buyer with value ``v`` levels
whose price is at most ``v``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PriceGrid:
    lo: float
    hi: float
    prices: int

    def __post_init__(self) -> None:
        if not isinstance(self.prices, int | np.integer) or self.prices < 2:
            raise ValueError(f"prices must be an integer >= 2 (got {self.prices!r})")
        if not (np.isfinite(self.lo) and np.isfinite(self.hi)) or self.hi <= self.lo:
            raise ValueError(f"price range must have lo < hi (got {self.lo}..{self.hi})")

    @classmethod
    def whole_units(cls, lo: int, hi: int) -> PriceGrid:
        """One level per whole price unit from ``lo`` to ``hi`` (the legacy view)."""
        return cls(float(lo), float(hi), int(hi - lo + 1))

    @property
    def step(self) -> float:
        return (self.hi - self.lo) / (self.prices - 1)

    def price(self, level: np.ndarray | int) -> np.ndarray | float:
        """Money for ``level`` (1-based); level 0 (no deal) maps to NaN."""
        lvl = np.asarray(level, dtype=float)
        out = self.lo + (lvl - 1.0) * self.step
        return np.where(lvl > 0, out, np.nan) if out.ndim else (float(out) if lvl > 0 else np.nan)

    def _level_price(self, k: np.ndarray) -> np.ndarray:
        """Price of level ``k``, the same float :meth:`price` gives (any integer ``k``)."""
        return self.lo + (k - 1.0) * self.step

    def level_at_least(self, price: np.ndarray | float) -> np.ndarray:
        """Lowest level whose price is >= ``price`` (P + 1 if none): a Seller's floor.

        The division may land a hair off an exact grid price, so the guess is
        checked against the very prices :meth:`price` returns and moved up
        one level if it falls short: a Seller never sells below its cost.
        """
        p = np.asarray(price, dtype=float)
        k = np.ceil((p - self.lo) / self.step - 1e-9) + 1
        k = np.where(self._level_price(k) < p, k + 1, k)
        return np.clip(k, 1, self.prices + 1).astype(np.int64)

    def level_at_most(self, price: np.ndarray | float) -> np.ndarray:
        """Highest level whose price is <= ``price`` (0 if none): a Buyer's ceiling."""
        p = np.asarray(price, dtype=float)
        k = np.floor((p - self.lo) / self.step + 1e-9) + 1
        k = np.where(self._level_price(k) > p, k - 1, k)
        return np.clip(k, 0, self.prices).astype(np.int64)
