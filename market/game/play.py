"""Play one negotiation between two strategies on a price grid: the two-agent runner.

The baseline command, the two-agent browser page and the report all start
here: each side's acceptable prices in money (:class:`Ranges`) become level
ranges on the grid, one negotiation runs through the protocol, and its
record comes back as a :class:`~market.game.record.NegotiationRecord`.
:func:`record_dict` is that record in money, for ``--json`` and files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from market.game.grid import PriceGrid
from market.game.pressure import PRESSURE
from market.game.protocol import Side, negotiate
from market.game.record import NegotiationRecord
from market.game.rules import Negotiator, Protocol


@dataclass(frozen=True)
class Ranges:
    """Each side's acceptable prices in money, ``(min, max)``."""

    buyer: tuple[float, float]
    seller: tuple[float, float]

    def of(self, side: str) -> tuple[float, float]:
        return self.buyer if side == "buyer" else self.seller


def acceptable_levels(grid: PriceGrid, lo: float, hi: float) -> tuple[int, int]:
    """The grid levels whose prices lie in ``[lo, hi]`` (``lo > hi`` if none)."""
    return int(grid.level_at_least(lo)), int(grid.level_at_most(hi))


def play(
    protocol: Protocol,
    grid: PriceGrid,
    seller: Negotiator,
    buyer: Negotiator,
    ranges: Ranges,
    first: int,
    rng: np.random.Generator,
) -> NegotiationRecord:
    """Run one negotiation between ``seller`` and ``buyer`` on ``grid``."""
    s_lo, s_hi = acceptable_levels(grid, *ranges.seller)
    b_lo, b_hi = acceptable_levels(grid, *ranges.buyer)
    record = negotiate(
        protocol,
        Side.single(seller, 1, s_lo, s_hi),
        Side.single(buyer, 1, b_lo, b_hi),
        first,
        rng,
    )
    return record.negotiation(0)


def money(grid: PriceGrid, level: int) -> float:
    return float(grid.price(level))


def fmt(price: float) -> str:
    """A price as the user typed it: whole numbers without decimals."""
    return str(int(round(price))) if abs(price - round(price)) < 1e-9 else f"{price:.4g}"


def record_dict(record: NegotiationRecord, grid: PriceGrid) -> dict[str, Any]:
    """The record for ``--json``: moves (side, action, level, price), outcome, rounds used."""

    def price(level: int) -> float | int | None:
        if level <= 0:
            return None
        p = money(grid, level)
        return int(round(p)) if abs(p - round(p)) < 1e-9 else p

    return {
        "moves": [
            {"move": m.move, "side": m.side, "action": m.action,
             "level": m.level if m.level > 0 else None, "price": price(m.level)}
            for m in record.moves
        ],
        "first": record.first,
        "outcome": {
            "deal": record.deal,
            "level": record.deal_level,
            "price": price(record.deal_level) if record.deal_level else None,
        },
        "rounds_used": record.rounds_used,
        **({"broke_down": True} if record.broke_down else {}),
    }


def game_for(
    lo: int, hi: int, rounds: int, fixed: Protocol | None = None, fixed_by: list[str] | None = None
) -> tuple[Protocol, PriceGrid, str]:
    """The game on the price range ``lo..hi``, and a note when a saved table shapes it.

    Without ``fixed``, one level per whole price unit and ``rounds`` rounds
    (the legacy view); with it (the P and T of saved Q-tables, which
    ``fixed_by`` names), the range is mapped onto its P levels.
    """
    if fixed is None:
        grid = PriceGrid.whole_units(lo, hi)
        return Protocol(grid.prices, rounds), grid, ""
    pressure = {d.name: getattr(fixed, d.name) for d in PRESSURE}  # the tables' game
    P, T = fixed.prices, fixed.rounds
    grid = PriceGrid(float(lo), float(hi), P)
    sides = fixed_by or []
    levels = ", ".join(fmt(float(grid.price(k))) for k in range(1, P + 1))
    note = (
        f"the {' and '.join(sides)} Q-table{'s fix' if len(sides) > 1 else ' fixes'} "
        f"P={P}, T={T}: price range {lo}-{hi} mapped onto {P} levels ({levels})"
    )
    return Protocol(P, T, **pressure), grid, note
