"""Shared fixtures: a seeded generator and a one-call bilateral negotiation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import strategies
from market.game.protocol import Side, negotiate
from market.game.record import BatchRecord
from market.game.rules import Protocol


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile (or load) the market engine once before any test, in the controlling process.

    On a fresh clone the first market compiles the engine (about 20 s, with a
    one-line notice on stderr); done here, the workers load it from numba's
    cache and no test sees the notice unless it asks for one.
    """
    if not hasattr(session.config, "workerinput"):
        from market.sim.engine import ensure_compiled

        ensure_compiled(lambda: None)


def _duel(
    seller: str | Any,
    buyer: str | Any,
    *,
    prices: int = 5,
    rounds: int = 5,
    seller_range: tuple[int, int] | None = None,
    buyer_range: tuple[int, int] | None = None,
    first: int | np.ndarray = 0,
    n: int = 1,
    seed: int = 0,
) -> BatchRecord:
    """``n`` negotiations of one Seller strategy against one Buyer strategy (names or objects).

    Ranges are acceptable levels ``(lo, hi)``, the whole grid by default.
    """
    protocol = Protocol(prices, rounds)
    s = strategies.make(seller, "seller", 1, protocol) if isinstance(seller, str) else seller
    b = strategies.make(buyer, "buyer", 1, protocol) if isinstance(buyer, str) else buyer
    s_lo, s_hi = seller_range or (1, prices)
    b_lo, b_hi = buyer_range or (1, prices)
    return negotiate(
        protocol,
        Side.single(s, n, s_lo, s_hi),
        Side.single(b, n, b_lo, b_hi),
        first,
        np.random.default_rng(seed),
    )


@pytest.fixture
def duel() -> Callable[..., BatchRecord]:
    return _duel


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)
