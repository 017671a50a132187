"""The negotiation record: what happened in a batch of negotiations, move by move.

The mechanism (:mod:`market.game.protocol`) writes it; learners replay it,
the market settles from it, views draw it. On arrays for a batch
(:class:`BatchRecord`), as a list of moves for one negotiation
(:class:`NegotiationRecord`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from market.game.rules import SIDE_NAMES, Protocol, level_rewards


@dataclass
class BatchRecord:
    """Outcome of a batch of negotiations (the negotiation record, on arrays).

    ``actions[i, m]`` is the action index taken at move ``m`` (-1 after the
    end); ``first[i]`` the side that moved first; ``level[i]`` the deal level
    (0: no deal); ``n_moves[i]`` how many moves were made.
    """

    protocol: Protocol
    actions: np.ndarray
    first: np.ndarray
    level: np.ndarray
    n_moves: np.ndarray

    @property
    def deal(self) -> np.ndarray:
        return self.level > 0

    @property
    def broke_down(self) -> np.ndarray:
        """The negotiations that ended on an offer: the talks broke down after it (only in a
        game at risk of that; otherwise only accept or reject ends one)."""
        n = len(self.level)
        if n == 0:
            return np.zeros(0, dtype=bool)
        last = self.actions[np.arange(n), np.maximum(self.n_moves - 1, 0)]
        return (self.n_moves > 0) & (last >= 0) & (last < self.protocol.prices)

    @property
    def rounds_used(self) -> np.ndarray:
        """Rounds in which at least one move happened (a round = one move by each side)."""
        return (self.n_moves + 1) // 2

    def mover(self, move: int) -> np.ndarray:
        """Side moving at ``move`` in each negotiation."""
        return self.first if move % 2 == 0 else 1 - self.first

    def __len__(self) -> int:
        return len(self.level)

    def negotiation(self, i: int) -> NegotiationRecord:
        """The record of negotiation ``i`` as a list of moves."""
        moves = []
        P = self.protocol.prices
        last_offer = 0
        for m in range(int(self.n_moves[i])):
            a = int(self.actions[i, m])
            side = int(self.mover(m)[i])
            if a < P:
                moves.append(Move(m, SIDE_NAMES[side], "offer", a + 1))
                last_offer = a + 1
            elif a == P:
                moves.append(Move(m, SIDE_NAMES[side], "accept", last_offer))
            else:
                moves.append(Move(m, SIDE_NAMES[side], "reject", 0))
        lvl = int(self.level[i])
        return NegotiationRecord(
            moves=moves,
            first=SIDE_NAMES[int(self.first[i])],
            deal_level=lvl if lvl > 0 else None,
            rounds_used=int(self.rounds_used[i]),
            broke_down=bool(self.broke_down[i]),
        )


@dataclass(frozen=True)
class Move:
    move: int
    side: str
    action: str  # "offer" | "accept" | "reject"
    level: int  # offered or accepted level; 0 for reject


@dataclass
class NegotiationRecord:
    """One negotiation: each move (who, action, level), the outcome, rounds used."""

    moves: list[Move] = field(default_factory=list)
    first: str = "seller"
    deal_level: int | None = None
    rounds_used: int = 0
    broke_down: bool = False  # the talks ended on an offer (a game at risk of that)

    @property
    def deal(self) -> bool:
        return self.deal_level is not None


def two_agent_rewards(record: BatchRecord) -> tuple[np.ndarray, np.ndarray]:
    """Document rewards of a batch: Seller ``p / P``, Buyer ``1 - p / P`` at a deal, else 0;
    with time costs each side's reward times its factor to the power of the accepted offer's
    index, less that many costs per offer (:meth:`~market.game.rules.Protocol.deal_rewards`,
    accepted at move ``n_moves - 1``)."""
    seller, buyer = level_rewards(record.level, record.protocol.prices)
    pr = record.protocol
    if pr.discounted or pr.costly:  # a deal's worth depends on the move that accepted it
        deal = np.asarray(record.level) > 0
        s, b = pr.deal_rewards(record.level, np.maximum(np.asarray(record.n_moves) - 1, 0))
        seller, buyer = np.where(deal, s, 0.0), np.where(deal, b, 0.0)
    return seller, buyer
