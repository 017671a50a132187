"""The rules of the two-agent game: its vocabulary, shared by the mechanism and every strategy.

What a negotiator may know and no more (as NegMAS keeps its negotiators to a
small vocabulary apart from the mechanism): the two sides, the sizes of the
game (:class:`Protocol`: ``P`` price levels, ``T`` rounds), which actions are
legal at which move, the action encoding, what a mover observes
(:class:`Observation`), what the mechanism asks of a negotiator
(:class:`Negotiator`) and the two-agent rewards.

Rules: moves alternate, the first mover at even moves; at move 0 it must
offer. A mover at move ``m >= 1`` observes the opponent's last offer ``p`` and
the round ``t = (m - 1) // 2`` in which it was made; it may offer a level,
accept ``p`` or reject. When ``t == T - 1`` it may only accept or reject.
Accept ends with a deal at ``p``, reject with none; no negotiation exceeds
``2T`` moves.

Action indices: ``0 .. P-1`` offer level ``a + 1``; ``P`` accept; ``P + 1``
reject. Levels are ``1 .. P``; level 0 means "no offer yet".

Time pressure, three kinds, each off by default (the document's game):

- Discounting (Rubinstein 1982): each side may discount a deal by its own
  factor per offer made before the accepted one, so the ``k``-th offer
  (``k = 0, 1, ...``; accepted at move ``k + 1``) is worth ``d^k`` of its
  undiscounted reward to a side with factor ``d``. One offer is one period
  of Rubinstein's model.
- A fixed cost per offer (after Rubinstein 1982's second case): a deal on the
  ``k``-th offer is worth a side its (discounted) share minus ``k c``, with
  ``c`` its cost; a negotiation that fails is worth 0, whenever it fails. Unlike
  Rubinstein's model, where a player pays its cost each period whatever
  happens, here the costs are paid only when a deal is made (walking away is
  free), so no side accepts a deal worth less than 0.
- Breakdown risk (Binmore, Rubinstein and Wolinsky 1986): after each
  counter-offer (an offer at move ``m >= 1``, which neither accepts nor
  rejects the offer on the table), the negotiation ends with no deal with
  probability ``Q``, before the other side moves. The opening offer always
  reaches the responder, so a deal on the ``k``-th offer is reached with
  probability at most ``(1 - Q)^k``, as if both sides discounted by
  ``1 - Q``; but here the deal, when it comes, is worth its full share.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple
from typing import Protocol as TypingProtocol

import numpy as np

from market.game import moves, pressure
from market.game.pressure import Pressure
from market.parameters import carries, check_value

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
@carries(pressure.PRESSURE, after="rounds")
class Protocol:
    """Sizes of the game: ``prices`` levels (P) and ``rounds`` (T); and its time pressure
    (the module docstring; declared in :mod:`market.game.pressure`): each side's discount
    factor and cost per offer, and the risk of a breakdown after each counter-offer (all
    off by default). Each kind of pressure is a field after ``rounds``, in the order of
    :data:`~market.game.pressure.PRESSURE`, made from its declaration."""

    prices: int = 5
    rounds: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.prices, int | np.integer) or self.prices < 2:
            raise ValueError(f"prices must be an integer >= 2 (got {self.prices!r})")
        if not isinstance(self.rounds, int | np.integer) or self.rounds < 1:
            raise ValueError(f"rounds must be an integer >= 1 (got {self.rounds!r})")
        for d in pressure.PRESSURE:
            v = getattr(self, d.name)
            if not isinstance(v, int | float | np.floating):  # numpy's floats included
                raise ValueError(f"{d.name} must be {d.allowed()} (got {v!r})")
            check_value(d, float(v))

    # --- time pressure ---------------------------------------------------------
    @property
    def discounted(self) -> bool:
        """Whether a deal loses value with time for either side."""
        return self.seller_discount < 1.0 or self.buyer_discount < 1.0

    @property
    def costly(self) -> bool:
        """Whether either side pays a fixed cost per offer."""
        return self.seller_cost > 0.0 or self.buyer_cost > 0.0

    @property
    def costs(self) -> tuple[float, float]:
        """Each side's cost per offer, (Seller, Buyer)."""
        return self.seller_cost, self.buyer_cost

    @property
    def timed(self) -> bool:
        """Whether what a deal is worth, or the chance to reach it, depends on when it is made
        (any kind of time pressure in force)."""
        return bool(pressure.in_force(self))

    @property
    def risky(self) -> bool:
        """Whether the talks may break down (the game's rule: a counter-offer is at risk)."""
        return bool(moves.at_risk(1, self.pressure))

    @cached_property
    def pressure(self) -> Pressure:
        """The game's time pressure as the record every compiled path takes (made once: a
        market reads it at every step)."""
        return Pressure.of(self)

    def deal_rewards(self, level: np.ndarray, move: np.ndarray | int
                     ) -> tuple[np.ndarray, np.ndarray]:
        """(Seller, Buyer) rewards of deals at ``level`` (1..P) accepted at ``move`` (on the
        offer of move ``move - 1``): each side's share, discounted, minus its costs
        (:func:`market.game.moves.worth`, the one statement of that rule)."""
        lv = np.asarray(level)
        mv = np.broadcast_to(np.asarray(move, dtype=np.int64), lv.shape)
        seller, buyer = moves.deal_values(np.ascontiguousarray(lv, dtype=np.int64).reshape(-1),
                                          np.ascontiguousarray(mv).reshape(-1), self.prices,
                                          self.pressure)
        return seller.reshape(lv.shape), buyer.reshape(lv.shape)

    def undiscounted(self) -> Protocol:
        """The same game without the kinds of pressure that change only what a deal is
        worth, discounts and costs (which levels are played does not depend on what they
        are worth, only the rewards do); a breakdown risk stays, since it decides which
        deals are reached."""
        return replace(self, **{d.name: d.default for kind in pressure.KINDS
                                if kind.worth_only for d in kind.params})

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

    # --- rules -----------------------------------------------------------------
    def round_of(self, move: int) -> int:
        """Round in which the offer observed at ``move`` was made (``-1`` at move 0)."""
        return (move - 1) // 2 if move > 0 else -1

    def legal(self, move: int) -> np.ndarray:
        """Boolean mask over actions legal at ``move`` (identical for every negotiation)."""
        lo, hi = moves.legal_block(int(move), self.prices, self.rounds)
        mask = np.zeros(self.n_actions, dtype=bool)
        mask[lo:hi] = True
        return mask

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
    strategies that answer the opponent's last concession need;
    ``negotiation``: each row's index in the batch the mechanism is running,
    the same at every move of one negotiation, which a strategy that keeps
    state per negotiation (an outside negotiator, one per negotiation) keys
    it by.
    """

    protocol: Protocol
    move: int
    offer: np.ndarray
    own: np.ndarray
    first: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    member: np.ndarray
    time_left: np.ndarray | None = None
    prev_offer: np.ndarray | None = None
    negotiation: np.ndarray | None = None

    @property
    def t(self) -> int:
        return self.protocol.round_of(self.move)

    @property
    def legal(self) -> np.ndarray:
        return self.protocol.legal(self.move)

    def __len__(self) -> int:
        return len(self.offer)


class Turn(NamedTuple):
    """What one mover sees at one move of one negotiation, as scalars: a compiled rule's input.

    The row form of :class:`Observation` (one negotiation, not a batch), which
    a strategy's compiled rule reads (:mod:`strategies.rule_based`):
    ``side`` the mover's, ``move`` the move about to be played, ``prices``
    and ``rounds`` the game's P and T, ``offer`` the opponent's last offer
    (0: none yet), ``own`` the mover's own last offer, ``prev`` the
    opponent's offer before ``offer``, ``lo``/``hi`` the mover's acceptable
    levels, ``param`` the member's own parameter (a concession exponent; 0
    for rules without one). numba passes it in registers, so reading it
    costs nothing.

    What the mover sees of the market around it, which an order book shows
    (a trader of the Santa Fe double auction tournament saw the same):
    ``own_best`` the best standing quote of the mover's own side (in bilateral
    bargaining, where the mover is its side, its own last offer);
    ``prior_low``/``prior_high`` the lowest and highest levels traded in the
    previous trading period (0: none known, in the first period and in
    bilateral bargaining); ``quiet`` the rounds since the last trade the mover
    saw, or since trading opened (in bilateral bargaining the negotiation's
    round: :func:`market.game.moves.bilateral_view`).
    """

    side: int
    move: int
    prices: int
    rounds: int
    offer: int
    own: int
    prev: int
    lo: int
    hi: int
    param: float
    own_best: int
    prior_low: int
    prior_high: int
    quiet: int


class Negotiator(TypingProtocol):
    """What the protocol needs of a strategy: a batch decision."""

    side: int

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray: ...


def level_rewards(level: np.ndarray, prices: int) -> np.ndarray:
    """(2, n) document rewards from deal levels (0: no deal).

    Seller ``p / P``, Buyer ``1 - p / P`` at a deal; both 0 without one.
    """
    frac = np.asarray(level) / prices
    return np.stack([frac, np.where(np.asarray(level) > 0, 1.0 - frac, 0.0)])
