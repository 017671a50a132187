"""Our strategies inside NegMAS: any registered strategy as a NegMAS ``SAONegotiator``.

:class:`StrategyNegotiator` plays a strategy spec (``"averaging"``,
``"boulware"``, ``"spe"``, ``"qlearning:tables.npz"``, ...) in NegMAS's
``SAOMechanism`` on a single ordered price issue. At the start of each
negotiation it reads the game from the mechanism: ``P`` is the number of
values of the issue (level ``k`` is its ``k``-th value), ``T`` the
mechanism's ``n_steps`` (a step of ``SAOMechanism`` is one move of each
side, a round of our protocol), and the acceptable range is the levels
whose utility is at least the negotiator's reserved value. The side is the
one its utility function says (a Seller prefers the last value, a Buyer the
first) unless given. Then each call of the mechanism is one move of our
protocol: the strategy sees the partner's last offer, its round, its own
last offer and who opened, exactly as in :func:`market.game.protocol.negotiate`,
and its offer, accept or reject becomes NegMAS's reject-and-counter-offer,
accept or end. So a negotiation in NegMAS between two of our strategies ends
as it does in our protocol: same agreement, same price, same number of moves
(:func:`run_negotiation` counts them as our record does).

:func:`run_negotiation` runs one negotiation in NegMAS with this project's
utility functions (:func:`strategies.negmas_agents.level_ufun`), between two
NegMAS negotiators or strategy specs; it is what the tests compare with our
protocol and what the ``negmas`` bench times.

Needs the ``negmas`` extra; importing this module without it raises an
``ImportError`` that says what to install.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    from negmas.sao import ResponseType, SAOMechanism, SAONegotiator, SAOResponse
except ImportError as exc:  # pragma: no cover - depends on the environment
    from strategies.negmas_agents import INSTALL

    raise ImportError(f"market.interop.negmas_adapter needs NegMAS: {INSTALL}") from exc

from market.game.rules import BUYER, SELLER, SIDE_NAMES, Observation, Protocol, side_index
from strategies import specs
from strategies.negmas_agents import OfferClock, level_ufun, price_issues


class StrategyNegotiator(SAONegotiator):
    """A registered strategy of this project as a NegMAS negotiator (one price issue).

    ``strategy`` is a spec as the command line takes it; ``side`` is
    ``"seller"`` or ``"buyer"`` (default: read from the utility function);
    ``seed`` seeds the strategy's random choices (``zi-c``, ties of a
    Q-table). ``discounts``: the game's time costs, (Seller, Buyer) factors per
    offer; by default read from the utility function (a NegMAS
    ``ExpDiscountedUFun``: its factor, taken for both sides), else none. The
    mechanism's ``pend`` (its probability of ending at each step) is read as
    the game's breakdown risk. Other
    keyword arguments go to ``SAONegotiator`` (``name``, ``ufun``, ...).
    """

    def __init__(
        self,
        strategy: str = "averaging",
        *,
        side: str | None = None,
        seed: int | None = None,
        discounts: tuple[float, float] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = specs.parse(strategy, "strategy")
        self.side_hint = None if side is None else side_index(side)
        self.seed = seed
        self.discounts = discounts
        self.strategy: Any = None

    # --- reading the game from the mechanism ----------------------------------------------
    def on_negotiation_start(self, state: Any) -> None:
        super().on_negotiation_start(state)
        self._start()

    def _start(self) -> None:
        nmi = self.nmi
        issues = list(getattr(nmi.outcome_space, "issues", ()))
        if len(issues) != 1 or not issues[0].is_discrete():
            raise ValueError("StrategyNegotiator plays a single discrete price issue "
                             f"(got {nmi.outcome_space})")
        if nmi.n_steps is None or getattr(nmi, "one_offer_per_step", False):
            raise ValueError("StrategyNegotiator needs a mechanism with n_steps (its rounds) "
                             "and one move of each side per step")
        self.values = list(issues[0].all)
        P, T = len(self.values), int(nmi.n_steps)
        if self.ufun is None:
            raise ValueError("StrategyNegotiator needs a utility function")
        utility = np.array([float(self.ufun((v,))) for v in self.values])
        side = self.side_hint
        if side is None:
            if utility[-1] == utility[0]:
                raise ValueError("the utility function does not say whether this side sells "
                                 "(prefers the last value) or buys; give side=")
            side = SELLER if utility[-1] > utility[0] else BUYER
        reserved = self.ufun.reserved_value
        floor = -np.inf if reserved is None else float(reserved)
        ok = np.flatnonzero(utility >= floor - 1e-9) + 1  # a rounding error decides nothing
        if ok.size:
            self.lo, self.hi = int(ok.min()), int(ok.max())
        else:  # nothing acceptable: the reservation lies off the grid
            self.lo, self.hi = (P + 1, P) if side == SELLER else (1, 0)
        self.side = side
        discounts = self.discounts
        if discounts is None:
            d = float(getattr(self.ufun, "discount", None) or 1.0)
            discounts = (d, d)
        # NegMAS's own risk that a negotiation ends at each step (``pend``) is this game's
        # breakdown risk: a strategy that plans for it (``spe``, a learner's game) sees it
        pend = float(getattr(nmi, "pend", 0.0) or 0.0)
        self.protocol = Protocol(P, T, *discounts, breakdown=pend if 0.0 < pend < 1.0 else 0.0)
        strategy = specs.build(self.spec, side, self.protocol, option="strategy")
        objective = getattr(strategy, "classifier", {}).get("objective")
        whole = (self.lo, self.hi) == (1, P)
        if objective == "two-agent rewards" and not whole:
            raise ValueError(
                f"strategy {self.spec} plays the two-agent game's equilibrium and ignores "
                f"reserved values; this mechanism's reserved value {reserved} leaves only "
                f"levels {self.lo}..{self.hi} of 1..{P} acceptable, which it cannot honour")
        self.strategy = strategy
        self._rng = np.random.default_rng(self.seed)
        self._index = {v: k + 1 for k, v in enumerate(self.values)}
        self._first: bool | None = None
        self._own = 0
        self._seen: list[int] = []

    # --- one move -------------------------------------------------------------------------
    def __call__(self, state: Any, dest: str | None = None) -> Any:
        if self.strategy is None:
            self._start()
        mine = state.current_proposer == self.id
        offer = None if mine else state.current_offer
        if self._first is None:
            self._first = offer is None
        if offer is not None:
            self._seen.append(self._index.get(offer[0], 0))
        move = 2 * state.step + (0 if self._first else 1)
        one = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
        obs = Observation(
            protocol=self.protocol, move=move,
            offer=one(self._seen[-1] if self._seen else 0), own=one(self._own),
            first=np.array([self._first]), lo=one(self.lo), hi=one(self.hi),
            member=np.zeros(1, dtype=np.intp),
            prev_offer=one(self._seen[-2] if len(self._seen) > 1 else 0),
            negotiation=np.zeros(1, dtype=np.intp),
        )
        a = int(self.strategy.act(obs, self._rng)[0])
        P = self.protocol.prices
        if not (0 <= a < self.protocol.n_actions and self.protocol.legal(move)[a]):
            raise ValueError(f"strategy {self.spec} played an illegal action at move {move}")
        if a < P:
            self._own = a + 1
            return SAOResponse(ResponseType.REJECT_OFFER, (self.values[a],))
        if a == P:
            return SAOResponse(ResponseType.ACCEPT_OFFER, state.current_offer)
        return SAOResponse(ResponseType.END_NEGOTIATION, None)

    def propose(self, state: Any, dest: str | None = None) -> Any:
        """NegMAS's proposal hook: the offer of this move, if the strategy makes one."""
        response = self(state, dest)
        return response.outcome if response.response == ResponseType.REJECT_OFFER else None


@dataclass
class NegmasOutcome:
    """How a negotiation in NegMAS ended, in our record's terms."""

    level: int  #: deal level, 0 without a deal
    n_moves: int  #: moves made, as our record counts them
    mechanism: Any  #: the finished ``SAOMechanism`` (trace, history, ...)


def run_negotiation(
    seller: Any,
    buyer: Any,
    *,
    prices: int,
    rounds: int,
    seller_floor: int = 1,
    buyer_ceiling: int | None = None,
    first: int | str = SELLER,
    seed: int | None = None,
    seller_discount: float = 1.0,
    buyer_discount: float = 1.0,
) -> NegmasOutcome:
    """One negotiation in NegMAS's ``SAOMechanism`` on the price levels ``1..prices``.

    ``seller``/``buyer``: NegMAS negotiators, or strategy specs (played by
    :class:`StrategyNegotiator`). Each side gets this project's utility
    function with its reservation level (the Seller's floor, the Buyer's
    ceiling); ``first`` adds that side first, so it opens. The number of
    moves counts every offer plus the final accept or walk-away, as
    :class:`~market.game.record.BatchRecord` does; a counter-offer at the
    final decision (after which NegMAS times out) is our protocol's reject.
    ``seller_discount``/``buyer_discount``: time costs per offer, as NegMAS
    discounted utility functions (:func:`~strategies.negmas_agents.level_ufun`)
    whose exponent is the index of the offer on the table.
    """
    f = side_index(first) if isinstance(first, str) else int(first)
    ceiling = prices if buyer_ceiling is None else buyer_ceiling
    protocol = Protocol(prices, rounds, seller_discount, buyer_discount)  # checks them
    issues = price_issues(prices)
    mech = SAOMechanism(issues=issues, n_steps=rounds)
    clock = OfferClock()
    factors = (protocol.seller_discount, protocol.buyer_discount)
    negotiators = []
    for side, neg, reservation in ((SELLER, seller, seller_floor), (BUYER, buyer, ceiling)):
        if isinstance(neg, str):
            neg = StrategyNegotiator(neg, side=SIDE_NAMES[side], seed=seed,
                                     name=SIDE_NAMES[side], discounts=factors)
        negotiators.append((neg, level_ufun(side, prices, reservation, issues, factors[side],
                                            clock)))
    for neg, ufun in negotiators if f == SELLER else negotiators[::-1]:
        mech.add(neg, ufun=ufun)
    clock.opener = negotiators[f][0].id
    mech.run()
    state = mech.state
    if state.has_error:  # a negotiator refused the game (NegMAS records it, and stops)
        raise ValueError(" ".join(str(state.error_details).split()))
    offers = sum(len(s.new_offers) for s in mech.history)
    ended_by_a_move = state.agreement is not None or state.broken
    level = int(state.agreement[0]) if state.agreement is not None else 0
    return NegmasOutcome(level, offers + int(ended_by_a_move), mech)
