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


def _moves(rec: BatchRecord, i: int = 0) -> list[tuple[str, int | str]]:
    """One negotiation's moves as a table: (side, offered level, or "accept" / "reject")."""
    return [(m.side, m.level if m.action == "offer" else m.action)
            for m in rec.negotiation(i).moves]


@pytest.fixture
def versus_test(duel: Callable[..., BatchRecord]) -> Callable[..., None]:
    """``versus_test(player, opponent, expected, side=..., first=..., prices=..., ...)``:
    ``player`` on ``side`` against ``opponent`` plays exactly the ``expected`` moves, written
    as a table of (side, move) rows (after the Axelrod library's ``versus_test``)."""

    def check(player: str, opponent: str, expected: list[tuple[str, int | str]], *,
              side: str = "seller", first: str = "seller", prices: int = 11, rounds: int = 6,
              seller_range: tuple[int, int] | None = None,
              buyer_range: tuple[int, int] | None = None, seed: int = 0) -> None:
        seller, buyer = (player, opponent) if side == "seller" else (opponent, player)
        rec = duel(seller, buyer, prices=prices, rounds=rounds, seller_range=seller_range,
                   buyer_range=buyer_range, first=0 if first == "seller" else 1, seed=seed)
        assert _moves(rec) == expected

    return check


@pytest.fixture
def expected_classifier() -> Callable[..., None]:
    """``expected_classifier(name, **differs)``: the strategy's classifier is the defaults
    but for ``differs``."""
    import strategies
    from strategies.base import Classifier

    def check(name: str, **differs: object) -> None:
        cls = strategies.get(name)
        got = Classifier(**{k: cls.classifier[k] for k in Classifier.__dataclass_fields__})
        assert got == Classifier(**differs)

    return check
