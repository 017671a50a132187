"""The bilateral alternating-offers protocol (the mechanism), run on arrays.

Semantics (:mod:`market.game.rules`): moves alternate, the first mover F at even moves. At
move 0, F must make an offer. A mover at move ``m >= 1`` observes the
opponent's last offer ``p`` and the round ``t = (m - 1) // 2`` in which it was
made; it may offer a level, accept ``p`` or reject. When ``t == T - 1`` it may
only accept or reject. Accept ends with a deal at ``p``, reject with no deal;
no negotiation exceeds ``2T`` moves.

The protocol knows nothing about how strategies decide: it hands each
strategy a batch of :class:`Observation` rows (one per negotiation in which
that strategy is to move) and gets back one action index per row. Many
negotiations advance in lockstep, one move at a time, so a market step with
thousands of pairs costs ``2T`` moves times the number of strategies present,
not one Python call per trader.

Action indices: ``0 .. P-1`` offer level ``a + 1``; ``P`` accept; ``P + 1``
reject. Levels are ``1 .. P``; level 0 means "no offer yet".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER, Negotiator, Observation, Protocol


@dataclass
class Side:
    """One side of a batch of negotiations: who plays, with what bounds.

    ``strategies`` is a list of negotiators; ``group[i]`` picks the one that
    plays negotiation ``i`` and ``member[i]`` which member of its population.
    ``lo``/``hi`` are acceptable levels per negotiation.
    """

    strategies: Sequence[Negotiator]
    group: np.ndarray
    member: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def single(cls, strategy: Negotiator, n: int, lo: int, hi: int) -> Side:
        return cls(
            [strategy],
            np.zeros(n, dtype=np.intp),
            np.zeros(n, dtype=np.intp),
            np.full(n, lo, dtype=np.int64),
            np.full(n, hi, dtype=np.int64),
        )


class IllegalAction(RuntimeError):
    """A strategy returned an action the protocol does not allow at that move."""


def negotiate(
    protocol: Protocol,
    seller: Side,
    buyer: Side,
    first: np.ndarray | int,
    rng: np.random.Generator,
    time_left: np.ndarray | None = None,
) -> BatchRecord:
    """Run a batch of negotiations to the end, all in lockstep.

    ``first`` is the side moving first, per negotiation or for all. Returns
    the :class:`BatchRecord`; rewards are the caller's business (two-agent
    game or market surplus).
    """
    n = len(seller.group)
    if len(buyer.group) != n:
        raise ValueError("seller and buyer batches differ in length")
    P = protocol.prices
    first_arr = np.broadcast_to(np.asarray(first, dtype=np.int8), (n,)).copy()
    actions = np.full((n, protocol.max_moves), -1, dtype=np.int32)
    level = np.zeros(n, dtype=np.int64)
    n_moves = np.zeros(n, dtype=np.int64)
    last = np.zeros((2, n), dtype=np.int64)  # last offer made by each side
    prev = np.zeros((2, n), dtype=np.int64)  # the offer each side made before its last
    active = np.ones(n, dtype=bool)
    sides = (seller, buyer)
    for m in range(protocol.max_moves):
        if not active.any():
            break
        legal = protocol.legal(m)
        mover = first_arr if m % 2 == 0 else 1 - first_arr
        chosen = np.empty(n, dtype=np.int64)
        for s in (SELLER, BUYER):
            rows_s = np.flatnonzero(active & (mover == s))
            if rows_s.size == 0:
                continue
            side = sides[s]
            groups = side.group[rows_s]
            for g in np.unique(groups):
                rows = rows_s[groups == g] if len(side.strategies) > 1 else rows_s
                obs = Observation(
                    protocol=protocol,
                    move=m,
                    offer=last[1 - s, rows],
                    own=last[s, rows],
                    first=first_arr[rows] == s,
                    lo=side.lo[rows],
                    hi=side.hi[rows],
                    member=side.member[rows],
                    time_left=None if time_left is None else time_left[rows],
                    prev_offer=prev[1 - s, rows],
                )
                a = np.asarray(side.strategies[g].act(obs, rng), dtype=np.int64)
                if (
                    a.shape != rows.shape
                    or not ((a >= 0) & (a < protocol.n_actions)).all()
                    or not legal[a].all()
                ):
                    name = getattr(side.strategies[g], "name", type(side.strategies[g]).__name__)
                    raise IllegalAction(f"strategy {name!r} played an illegal action at move {m}")
                chosen[rows] = a
        rows = np.flatnonzero(active)
        a = chosen[rows]
        actions[rows, m] = a
        n_moves[rows] = m + 1
        mv = mover[rows]
        offered = a < P
        prev[mv[offered], rows[offered]] = last[mv[offered], rows[offered]]
        last[mv[offered], rows[offered]] = a[offered] + 1
        acc = a == P
        level[rows[acc]] = last[1 - mv[acc], rows[acc]]
        active[rows[~offered]] = False
    return BatchRecord(protocol, actions, first_arr, level, n_moves)
