"""The bilateral alternating-offers protocol (the mechanism), run on arrays.

Semantics (DESIGN.md): moves alternate, the first mover F at even moves. At
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
from dataclasses import dataclass, field
from typing import Protocol as TypingProtocol

import numpy as np

SELLER = 0
BUYER = 1
SIDE_NAMES = ("seller", "buyer")


def side_index(name: str) -> int:
    """Map ``"seller"``/``"buyer"`` to :data:`SELLER`/:data:`BUYER`."""
    try:
        return SIDE_NAMES.index(name)
    except ValueError:
        raise ValueError(f"side must be 'seller' or 'buyer' (got {name!r})") from None


@dataclass(frozen=True)
class Protocol:
    """Sizes of the game: ``prices`` levels (P) and ``rounds`` (T)."""

    prices: int = 5
    rounds: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.prices, int | np.integer) or self.prices < 2:
            raise ValueError(f"prices must be an integer >= 2 (got {self.prices!r})")
        if not isinstance(self.rounds, int | np.integer) or self.rounds < 1:
            raise ValueError(f"rounds must be an integer >= 1 (got {self.rounds!r})")

    # --- sizes -----------------------------------------------------------------
    @property
    def n_actions(self) -> int:
        """Offers ``1..P``, then accept, then reject."""
        return self.prices + 2

    @property
    def accept(self) -> int:
        return self.prices

    @property
    def reject(self) -> int:
        return self.prices + 1

    @property
    def max_moves(self) -> int:
        return 2 * self.rounds

    @property
    def n_states(self) -> int:
        """Rows of a document-layout Q-table: ``s``, ``p.t`` for all p, t, then ``d``."""
        return 2 + self.prices * self.rounds

    @property
    def terminal_state(self) -> int:
        return self.n_states - 1

    # --- rules -----------------------------------------------------------------
    def round_of(self, move: int) -> int:
        """Round in which the offer observed at ``move`` was made (``-1`` at move 0)."""
        return (move - 1) // 2 if move > 0 else -1

    def legal(self, move: int) -> np.ndarray:
        """Boolean mask over actions legal at ``move`` (identical for every negotiation)."""
        mask = np.ones(self.n_actions, dtype=bool)
        if move == 0:
            mask[self.accept :] = False
        elif self.round_of(move) == self.rounds - 1:
            mask[: self.prices] = False
        return mask

    def state_index(self, offer: np.ndarray | int, t: int) -> np.ndarray | int:
        """Document-layout row for observation ``(offer, t)``; ``offer == 0`` is ``s``."""
        return np.where(np.asarray(offer) > 0, 1 + t * self.prices + (np.asarray(offer) - 1), 0)

    def state_labels(self) -> list[str]:
        offers = [f"{p}.{t}" for t in range(self.rounds) for p in range(1, self.prices + 1)]
        return ["s", *offers, "d"]

    def action_labels(self) -> list[str]:
        return [str(p) for p in range(1, self.prices + 1)] + ["accept", "reject"]


@dataclass
class Observation:
    """What the movers of one strategy see at one move, one row per negotiation.

    ``offer``: the opponent's last offer level (0 at move 0); ``t``: the round
    of that offer; ``own``: the mover's own last offer (0 if none yet);
    ``first``: whether the mover moved first; ``lo``/``hi``: the mover's
    acceptable levels (Seller: at least its cost, Buyer: at most its value);
    ``member``: which member of the strategy's population is moving;
    ``time_left``: steps left in the trading period (market clock), if any;
    ``prev_offer``: the opponent's offer before ``offer`` (0 if none), which
    strategies that answer the opponent's last concession need.
    """

    protocol: Protocol
    side: int
    move: int
    offer: np.ndarray
    own: np.ndarray
    first: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    member: np.ndarray
    time_left: np.ndarray | None = None
    prev_offer: np.ndarray | None = None

    @property
    def t(self) -> int:
        return self.protocol.round_of(self.move)

    @property
    def legal(self) -> np.ndarray:
        return self.protocol.legal(self.move)

    def __len__(self) -> int:
        return len(self.offer)


class Negotiator(TypingProtocol):
    """What the protocol needs of a strategy: a batch decision."""

    side: int

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray: ...


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

    @property
    def deal(self) -> bool:
        return self.deal_level is not None


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
                    side=s,
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


def level_rewards(level: np.ndarray, prices: int) -> np.ndarray:
    """(2, n) document rewards from deal levels (0: no deal).

    Seller ``p / P``, Buyer ``1 - p / P`` at a deal; both 0 without one.
    """
    frac = np.asarray(level) / prices
    return np.stack([frac, np.where(np.asarray(level) > 0, 1.0 - frac, 0.0)])


def two_agent_rewards(record: BatchRecord) -> tuple[np.ndarray, np.ndarray]:
    """Document rewards of a batch: Seller ``p / P``, Buyer ``1 - p / P`` at a deal, else 0."""
    seller, buyer = level_rewards(record.level, record.protocol.prices)
    return seller, buyer
