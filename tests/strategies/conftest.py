"""Fixtures for strategy tests: a hand-made observation, and the offers of one side."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from market.game.record import BatchRecord
from market.game.rules import Observation, Protocol


def _observe(protocol: Protocol, side: int, move: int, offer, lo, hi, own=None, prev=None,
             first=None) -> Observation:
    """One row per ``offer``; scalars are broadcast, the first mover moves at even moves."""
    offer = np.atleast_1d(np.asarray(offer, dtype=np.int64))
    n = len(offer)
    full = lambda v, d: np.broadcast_to(np.asarray(d if v is None else v), (n,)).copy()  # noqa: E731
    return Observation(
        protocol=protocol, move=move, offer=offer, own=full(own, 0),
        first=full(first, move % 2 == 0), lo=full(lo, 1), hi=full(hi, protocol.prices),
        member=np.zeros(n, dtype=np.intp), prev_offer=full(prev, 0),
    )


def _offers_of(rec: BatchRecord, i: int, side: str) -> list[int]:
    return [m.level for m in rec.negotiation(i).moves if m.side == side and m.action == "offer"]


@pytest.fixture
def observe() -> Callable[..., Observation]:
    return _observe


@pytest.fixture
def offers_of() -> Callable[..., list[int]]:
    return _offers_of
