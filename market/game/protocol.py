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

from market.errors import StrategyFailed, UsageError, failed, reraise_signal
from market.game import moves
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


#: the generator of a game without a breakdown risk, which never draws from it
_NO_DRAWS = np.random.default_rng(0)


class IllegalAction(StrategyFailed):
    """A strategy returned an action the protocol does not allow at that move (a level off
    the grid, a NaN, an accept before any offer): its fault, said in one line."""


def illegal(name: str, move: int) -> IllegalAction:
    """The error of strategy ``name`` that played an action the rules forbid at ``move``,
    in the words every engine says it in."""
    return IllegalAction(f"strategy {name!r} played an illegal action at move {move} (its "
                         "rule broke the protocol's rules: a target off the grid, 1 .. P, "
                         "or an action the move does not allow)")


class Lockstep:
    """A batch of negotiations in progress: the mechanism's state, one move at a time.

    :func:`negotiate` drives it with strategies until every negotiation has
    ended; the environments for outside learners (:mod:`market.interop`)
    drive one negotiation with actions that arrive one step at a time. Both
    go through :meth:`observe` and :meth:`play`, so the rules of a move
    (who moves, what is legal, what an action does to the table) live here
    once.
    """

    def __init__(self, protocol: Protocol, first: np.ndarray | int, n: int) -> None:
        self.protocol = protocol
        self.first = np.broadcast_to(np.asarray(first, dtype=np.int8), (n,)).copy()
        self.actions = np.full((n, protocol.max_moves), -1, dtype=np.int32)
        self.level = np.zeros(n, dtype=np.int64)
        self.n_moves = np.zeros(n, dtype=np.int64)
        self.last = np.zeros((2, n), dtype=np.int64)  # last offer made by each side
        self.prev = np.zeros((2, n), dtype=np.int64)  # the offer each side made before its last
        self.active = np.ones(n, dtype=bool)
        #: the move about to be played
        self.move = 0

    @property
    def done(self) -> bool:
        """Every negotiation has ended (or the last move has been played)."""
        return self.move >= self.protocol.max_moves or not self.active.any()

    def mover(self) -> np.ndarray:
        """The side moving now, per negotiation (:func:`market.game.moves.mover`)."""
        return self.first if moves.mover(self.move, 0) == 0 else 1 - self.first

    def to_move(self, side: int) -> np.ndarray:
        """Indices of the negotiations still running in which ``side`` moves now."""
        return np.flatnonzero(self.active & (self.mover() == side))

    def observe(
        self,
        side: int,
        rows: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        member: np.ndarray,
        time_left: np.ndarray | None = None,
    ) -> Observation:
        """What ``side`` sees now in negotiations ``rows`` (its bounds and members given)."""
        return Observation(
            protocol=self.protocol,
            move=self.move,
            offer=self.last[1 - side, rows],
            own=self.last[side, rows],
            first=self.first[rows] == side,
            lo=lo,
            hi=hi,
            member=member,
            time_left=time_left,
            prev_offer=self.prev[1 - side, rows],
            negotiation=rows,
        )

    def legal(self, actions: np.ndarray) -> np.ndarray:
        """Which of ``actions`` the rules allow now."""
        a = np.asarray(actions, dtype=np.int64)
        ok = (a >= 0) & (a < self.protocol.n_actions)
        return ok & self.protocol.legal(self.move)[np.where(ok, a, 0)]

    def play(self, chosen: np.ndarray, rng: np.random.Generator | None = None) -> None:
        """Play the move: ``chosen[i]`` is the action of negotiation ``i`` (ignored if it ended).

        The rules of a move are :func:`market.game.moves.play_move`'s (offers go on the
        table, accept ends with a deal at the opponent's last offer, reject without one;
        with a breakdown risk Q, each negotiation that counter-offered then draws one
        uniform from ``rng``, in ascending order, and ends with no deal when it is below
        Q), the same compiled function the negotiation loops run.
        """
        if rng is None:
            if self.protocol.risky:
                raise ValueError("a game with a breakdown risk needs a generator to play")
            rng = _NO_DRAWS
        running = np.flatnonzero(self.active)
        n = moves.play_move(self.move, self.protocol.prices, self.protocol.pressure, running,
                            running.size, np.ascontiguousarray(chosen, dtype=np.int64),
                            (self.first, self.last, self.prev),
                            (self.actions, self.level, self.n_moves), rng)
        self.active[:] = False
        self.active[running[:n]] = True
        self.move += 1

    def record(self) -> BatchRecord:
        return BatchRecord(self.protocol, self.actions, self.first, self.level, self.n_moves)


#: bytes per negotiation row beyond its record: the mechanism's per-row state and a move's
#: temporaries (measured about 350)
ROW_BYTES = 400
#: bytes per row and action a strategy may hold during a move (compiled decisions hold none:
#: a margin for a strategy of another library's that scores every action)
ACTION_BYTES = 8


def negotiation_bytes(protocol: Protocol, n: int) -> int:
    """Peak bytes :func:`negotiate` holds for ``n`` negotiations run together (an upper estimate).

    The record keeps ``2T`` actions per row (int32); each move adds per-row
    state and, for a strategy that scores every action (Q-learning), a few
    ``(n, P + 2)`` arrays. Callers that size a batch (the market, the
    tournament) check this against the machine's memory before running.
    """
    return int(n) * (4 * protocol.max_moves + ROW_BYTES + ACTION_BYTES * protocol.n_actions)


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
    state = Lockstep(protocol, first, n)
    sides = (seller, buyer)
    while not state.done:
        chosen = np.empty(n, dtype=np.int64)
        for s in (SELLER, BUYER):
            rows_s = state.to_move(s)
            if rows_s.size == 0:
                continue
            side = sides[s]
            groups = side.group[rows_s]
            for g in np.unique(groups):
                rows = rows_s[groups == g] if len(side.strategies) > 1 else rows_s
                obs = state.observe(
                    s, rows, side.lo[rows], side.hi[rows], side.member[rows],
                    None if time_left is None else time_left[rows],
                )
                strat = side.strategies[g]
                name = getattr(strat, "name", "") or type(strat).__name__
                try:
                    played = np.asarray(strat.act(obs, rng))
                except (UsageError, NotImplementedError):  # said already, naming it
                    raise
                except Exception as exc:  # its own code: one line naming it
                    reraise_signal(exc)
                    raise failed(repr(name), state.move, exc) from exc
                whole = played.dtype.kind in "iu" or (  # floats only if whole and finite
                    played.dtype.kind == "f" and bool(np.isfinite(played).all())
                    and bool((played == np.round(played)).all()))
                if played.shape != rows.shape or not whole:
                    raise IllegalAction(f"strategy {name!r} played an illegal action at move "
                                        f"{state.move} (not a whole level: {played!r:.60})")
                a = played.astype(np.int64)
                if not state.legal(a).all():
                    raise illegal(name, state.move)
                chosen[rows] = a
        state.play(chosen, rng)
    return state.record()
