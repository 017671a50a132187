"""NegMAS negotiators and the ANAC agents as strategies of this game.

``negmas:CLASS`` plays a negotiator class of NegMAS's ``negmas.sao`` (default
``BoulwareTBNegotiator``); ``genius:AGENT`` one of the agents of the ANAC
competitions 2010-2019 that ``negmas-genius-agents`` reimplements in Python
(default ``HardHeaded``, the winner of ANAC 2011). Both need the optional
extra (``pip install -e ".[negmas]"``); NegMAS is imported only when one of
them is named, so the rest of the project works without it.

How a NegMAS negotiator meets our protocol. A negotiator of NegMAS is an
object with state that lives inside one negotiation, run by NegMAS's
mechanism (``SAOMechanism``), which calls its lifecycle callbacks (start,
round start, the partner's proposals and responses, round end, end) around
each of its moves. So this strategy keeps, for every negotiation its
members take part in, one fresh negotiator inside a real ``SAOMechanism``
of that negotiation's game: the issue is the price level ``1..P``,
``n_steps`` is ``T`` (a NegMAS step is one move of each side, so the
negotiator sees NegMAS's own clock, ``(step + 1) / (T + 1)``), and its
utility function is linear in the price, 0 at its worst level and 1 at its
best, with the reserved value at its reservation level (a Seller's floor
``lo``, a Buyer's ceiling ``hi``, clipped to the grid). The other side is a
stand-in inside that mechanism that plays what our protocol's opponent
played; when the mechanism would ask it before the opponent has moved, it
answers NegMAS's ``WAIT`` and the mechanism resumes there at the next move.
Every callback therefore comes from NegMAS's mechanism itself, in its own
order. Negotiations are told apart by ``Observation.negotiation`` (the
row's index in the batch the protocol runs): a negotiator is made when its
negotiation appears at this side's first move (move 0 for the first mover,
1 for the second).

Mapping of moves. A NegMAS offer is our offer of that level, acceptance our
accept, ending the negotiation (or refusing to offer) our reject. Two moves
of NegMAS have no counterpart here: a counter-offer at the final decision
(where our protocol allows only accept or reject) is a reject, which is
also what it amounts to in NegMAS (the mechanism times out); and a
negotiator that will not open at move 0, where our protocol requires an
offer, opens at its best level.

Randomness: NegMAS's and the ANAC agents' random choices use Python's
``random`` module. Each negotiation gets its own stream, seeded from the
generator the protocol passes, swapped in around each of its moves and out
again, so the same seed gives the same games and the caller's ``random``
state is left alone.

Speed: NegMAS's mechanism runs one negotiation at a time, in Python, at a
few milliseconds per negotiation: a batch of these negotiations costs what
NegMAS costs, not what our lockstep protocol costs.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import inspect
import random
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import Any, ClassVar

import numpy as np

from market.game.rules import SELLER, Observation, Protocol
from strategies._ranges import offer_bounds
from strategies.base import Classifier, Strategy

#: what to install when NegMAS is missing
INSTALL = 'pip install -e ".[negmas]"'
#: what to show while a library loads (seconds on a cold machine): the command line sets a
#: spinner; by default nothing, since a library's caller may not own the terminal
def loading(module: str) -> Any:  # noqa: ARG001 - replaced by the command line
    return contextlib.nullcontext()

#: the ANAC competitions whose agents ``genius`` plays, in order
ANAC_GROUPS = tuple(f"anac{year}" for year in range(2010, 2020))

#: agents that cannot play small grids: the fewest price levels they need, and why
MIN_PRICES: dict[str, tuple[int, str]] = {
    "SAGA": (20, "it fills a population of 20 distinct bids and loops forever with fewer"),
}


def check_game(name: str, protocol: Protocol) -> None:
    """``ValueError`` if the negotiator class ``name`` cannot play a game of this size."""
    need, why = MIN_PRICES.get(name, (2, ""))
    if protocol.prices < need:
        raise ValueError(f"{name} cannot play P={protocol.prices} price levels ({why}); "
                         f"it needs P >= {need}")


# --- the libraries, imported when first needed ----------------------------------------------
def _import(module: str, what: str) -> Any:

    try:
        with loading(module):
            return importlib.import_module(module)
    except ImportError:
        raise ValueError(f"{what} needs the negmas extra, which is not installed: {INSTALL}") \
            from None


def negmas_sao() -> Any:
    """NegMAS's ``negmas.sao`` (``ValueError`` naming the fix if NegMAS is missing)."""
    return _import("negmas.sao", "a NegMAS negotiator")


def genius_agents() -> Any:
    """The ``negmas_genius_agents`` package (``ValueError`` naming the fix if missing)."""
    negmas_sao()
    return _import("negmas_genius_agents", "an ANAC agent")


@cache
def declared_names(module: str) -> list[str] | None:
    """A package's ``__all__`` read from its source, without importing it (None if not a
    literal list): a misspelt ANAC agent is refused in a fraction of a second, where importing
    negmas_genius_agents takes over one."""
    import ast

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        with open(spec.origin, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(n) for n in names]
    return None


def anac_agents() -> list[str]:
    """The names of the ANAC agents, competition by competition (2010 first)."""
    return [cls.__name__ for cls in genius_agents().get_agents(list(ANAC_GROUPS))]


def _closest(name: str, choices: list[str]) -> str:
    by_lower = {c.lower(): c for c in choices}
    if name.lower() in by_lower:
        return f"; did you mean {by_lower[name.lower()]}?"
    near = [c for c in choices if c.lower().startswith(name.lower())][:3]
    near = near or difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(near)}?" if near else ""


def check_name(family: str, name: str) -> None:
    """``ValueError`` for an ANAC agent name the package does not declare, read from its
    source without importing it (importing the agents takes over a second); other names are
    checked by :func:`resolve`."""
    declared = declared_names("negmas_genius_agents") if family == "genius" else None
    if declared is not None and name not in declared:
        raise ValueError(f"genius: unknown class {name!r} in negmas_genius_agents"
                         f"{_closest(name, declared)} (give a negotiator class such as AgentK)")


@cache
def resolve(family: str, name: str) -> type:
    """The negotiator class ``name`` of ``family`` ("negmas" or "genius"), checked.

    ``ValueError`` with one line naming the problem and the fix when the
    extra is missing, the class is unknown, is not a negotiator, cannot be
    built without arguments or fails a trial negotiation (a short one on 21
    price levels against NegMAS's Boulware, each side opening once).
    """
    check_name(family, name)
    if family == "negmas":
        module, where, example = negmas_sao(), "negmas.sao", "BoulwareTBNegotiator"
    else:
        module, where, example = genius_agents(), "negmas_genius_agents", "AgentK"
    names = list(module.__all__)
    if name not in names or not inspect.isclass(getattr(module, name, None)):
        candidates = [n for n in names if _is_negotiator(getattr(module, n, None))]
        raise ValueError(f"{family}: unknown class {name!r} in {where}{_closest(name, candidates)}"
                         f" (give a negotiator class such as {example})")
    cls = getattr(module, name)
    if not _is_negotiator(cls):
        raise ValueError(f"{family}: {name} is not a negotiator (give a negotiator class of "
                         f"{where}, such as {example})")
    try:
        _trial(cls)
    except Exception as exc:  # noqa: BLE001 - any failure means: not usable from a spec
        raise ValueError(f"{family}: {name} cannot play a negotiation built from its name alone "
                         f"({type(exc).__name__}: {str(exc).strip()[:120]}); choose another "
                         "class") from None
    return cls


def _trial(cls: type) -> None:
    """A short negotiation of a fresh ``cls()`` in NegMAS's own mechanism, as each side."""
    sao = negmas_sao()
    prices = 21
    saved = random.getstate()  # NegMAS draws even to name an issue: leave the caller's stream
    moved = False
    try:
        issues = price_issues(prices)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", _negmas_warning())
            for side in (SELLER, 1 - SELLER):
                mech = sao.SAOMechanism(issues=issues, n_steps=3)
                pair = [(cls(), level_ufun(side, prices, 1 if side == SELLER else prices, issues)),
                        (sao.BoulwareTBNegotiator(),
                         level_ufun(1 - side, prices, prices if side == SELLER else 1, issues))]
                for neg, ufun in pair:
                    mech.add(neg, ufun=ufun)
                mech.run()
                if mech.state.has_error:
                    raise RuntimeError(mech.state.error_details)
                mine = pair[0][0].id
                moved = moved or mech.state.agreement is not None or any(
                    nid == mine for step in mech.history for nid, _ in step.new_offers)
    finally:
        random.setstate(saved)
    if not moved:  # SAONegotiator, ControlledSAONegotiator, SAOPRNegotiator: no rule of its own
        raise RuntimeError("it made no offer and accepted nothing in a trial negotiation "
                           "(a base class, or one that needs a controller)")


def _is_negotiator(obj: Any) -> bool:
    from negmas.gb.negotiators.base import GBNegotiator

    return inspect.isclass(obj) and issubclass(obj, GBNegotiator) and not inspect.isabstract(obj)


# --- the game in NegMAS's terms (shared with market.interop) --------------------------------
def price_issues(prices: int) -> list[Any]:
    """The outcome space: one integer issue ``price`` with the levels ``1..P``."""
    from negmas import make_issue

    return [make_issue((1, int(prices)), name="price")]


class OfferClock:
    """The exponent of a NegMAS discounted utility function in this game's time.

    Our time costs are per offer: the k-th offer (counted from 0) is worth
    ``d ** k``. NegMAS's ``ExpDiscountedUFun`` raises its factor to what its
    ``factor`` callable returns for the mechanism's state; its usual
    ``"step"`` counts ``SAOMechanism`` steps, each a round of two offers here
    (and inside :class:`Session` also the stand-in's WAIT steps), so it cannot
    say which offer is on the table. This callable can: told the move by
    :class:`Session` (``move``), or read from the state (``opener``: the id of
    the negotiator that opened; in round ``s`` the opener's offer is the
    ``2s``-th, the answer the ``2s + 1``-th). The exponent is that of the
    offer on the table, the one a negotiator weighs at its move.
    """

    def __init__(self) -> None:
        self.move: int | None = None
        self.opener: str | None = None

    def __call__(self, state: Any) -> float:
        if self.move is not None:
            return float(max(self.move - 1, 0))
        proposer = getattr(state, "current_proposer", None)
        if proposer is None:
            return 0.0
        return float(max(2 * int(state.step) + (0 if proposer == self.opener else -1), 0))


def level_ufun(side: int, prices: int, reservation: int, issues: list[Any],
               discount: float = 1.0, clock: OfferClock | None = None) -> Any:
    """A side's utility: linear in the level, 0 at its worst and 1 at its best level, and a
    reserved value equal to the utility of its ``reservation`` level (a Seller's floor, a
    Buyer's ceiling), so that level is acceptable and the ones beyond it are not.

    With a time cost (``discount`` below 1) it is NegMAS's ``ExpDiscountedUFun`` of that,
    per offer on the table (``clock``, :class:`OfferClock`), its reserved value discounted
    alike (so what is acceptable does not change with time, only what it is worth)."""
    from negmas.preferences import AffineUtilityFunction, ExpDiscountedUFun

    span = float(prices - 1)
    if side == SELLER:
        u = AffineUtilityFunction(weights=[1.0 / span], bias=-1.0 / span, issues=issues)
    else:
        u = AffineUtilityFunction(weights=[-1.0 / span], bias=prices / span, issues=issues)
    u.reserved_value = float(u((int(reservation),)))
    if discount >= 1.0:
        return u
    if clock is None:
        raise ValueError("a discounted utility function needs the offer clock")
    return ExpDiscountedUFun(u, discount=float(discount), factor=clock,
                             reserved_value=u.reserved_value, dynamic_reservation=True)


# --- one negotiation inside NegMAS's mechanism ------------------------------------------------
class Session:
    """One negotiator in one ``SAOMechanism`` of one negotiation, moved by our protocol."""

    #: a negotiator that keeps answering WAIT is walking away after this many tries
    MAX_WAITS = 100

    def __init__(
        self,
        make_negotiator: Callable[[], Any],
        side: int,
        protocol: Protocol,
        reservation: int,
        first: bool,
        seed: int,
    ) -> None:
        self.protocol, self.side, self.first = protocol, side, first
        self.over = False
        self._random = random.Random(seed).getstate()
        with self._own_random():  # its constructor may draw too
            self.negotiator = negotiator = make_negotiator()
            sao = negmas_sao()
            P, T = protocol.prices, protocol.rounds
            issues = price_issues(P)
            self.mechanism = sao.SAOMechanism(issues=issues, n_steps=T, name="negotiation")
            self.partner = _partner_class()(name="opponent")
            self.partner.mechanism = self.mechanism
            #: the index of the offer on the table, for a discounted utility (told by move())
            self.clock = OfferClock()
            own_d = protocol.seller_discount if side == SELLER else protocol.buyer_discount
            own = level_ufun(side, P, reservation, issues, own_d, self.clock)
            other = level_ufun(1 - side, P, 1 if side == SELLER else P, issues)
            order = [(negotiator, own), (self.partner, other)]
            for neg, ufun in order if first else order[::-1]:
                self.mechanism.add(neg, ufun=ufun)

    @contextmanager
    def _own_random(self) -> Iterator[None]:
        """Python's ``random`` set to this negotiation's stream (and NegMAS's chatter off)."""
        saved = random.getstate()
        random.setstate(self._random)
        try:
            with warnings.catch_warnings():
                # NegMAS's remarks on its negotiators' internals (e.g. a tit-for-tat's
                # "concession is negative") would print on every negotiation
                warnings.simplefilter("ignore", _negmas_warning())
                yield
        finally:
            self._random = random.getstate()
            random.setstate(saved)

    def move(self, move: int, offer: int) -> int:
        """The negotiator's action index at our ``move``, the opponent's last offer being
        ``offer`` (0 if none yet)."""
        P = self.protocol.prices
        if self.over:
            return P + 1
        self.clock.move = move
        with self._own_random():
            kind, level = self._step(offer)
            if kind == "offer" and not self.protocol.legal(move)[0]:
                # a counter-offer at the final decision: NegMAS times out and ends it
                self.mechanism.step()
        if kind == "accept":
            self.over = True
            return P
        if kind == "offer" and self.protocol.legal(move)[0]:
            return level - 1
        self.over = True
        if move == 0:  # our protocol's first move must be an offer: the side's best level
            return P - 1 if self.side == SELLER else 0
        return P + 1

    def _step(self, offer: int) -> tuple[str, int]:
        """Run the mechanism until the negotiator has moved: ``("offer", level)``,
        ``("accept", 0)`` or ``("end", 0)`` (walked away, made no valid offer)."""
        mech, partner, me = self.mechanism, self.partner, self.negotiator.id
        if offer:
            partner.pending = offer
            if self.first:  # the partner's offer completes the round the negotiator opened
                mech.step()
        partner.asked = False
        for _ in range(self.MAX_WAITS):
            mech.step()
            state = mech.state
            if state.agreement is not None:
                return "accept", 0
            if not state.running:
                return "end", 0
            if partner.asked or not state.waiting:
                break
        else:
            return "end", 0
        for nid, outcome in reversed(state.new_offers):
            if nid == me:
                level = outcome[0] if outcome is not None and len(outcome) == 1 else None
                if isinstance(level, int | np.integer) and 1 <= level <= self.protocol.prices:
                    return "offer", int(level)
                break
        return "end", 0


@lru_cache(maxsize=1)
def _negmas_warning() -> type[Warning]:
    from negmas.warnings import NegmasWarning

    return NegmasWarning


@lru_cache(maxsize=1)
def _partner_class() -> type:
    """The stand-in for our protocol's opponent inside NegMAS's mechanism (built lazily)."""
    sao = negmas_sao()

    class Partner(sao.SAONegotiator):
        """Plays the offers it is handed; answers WAIT when none has arrived yet."""

        pending: int | None = None
        asked = False
        mechanism: Any = None

        def propose(self, state: Any, dest: str | None = None) -> Any:
            return None

        def __call__(self, state: Any, dest: str | None = None) -> Any:
            if self.pending is None:
                self.asked = True
                # NegMAS would now tell the negotiator that its partner answered WAIT (a
                # callback a real opponent never causes); the mechanism returns at once
                # after a WAIT, so silencing the callbacks here silences only that one.
                self.mechanism._extra_callbacks = False
                return sao.SAOResponse(sao.ResponseType.WAIT, None)
            self.mechanism._extra_callbacks = True
            level, self.pending = self.pending, None
            return sao.SAOResponse(sao.ResponseType.REJECT_OFFER, (level,))

    return Partner


# --- the strategies ---------------------------------------------------------------------------
class NegmasNegotiator(Strategy):
    """Plays a NegMAS negotiator class (default BoulwareTBNegotiator), one per negotiation."""

    name = "negmas"
    family: ClassVar[str] = "negmas"
    default_class: ClassVar[str] = "BoulwareTBNegotiator"
    argument = "CLASS"
    classifier = Classifier(
        # what holds for every class it can wrap: some draw at random, some accept
        # anything (NiceNegotiator), so neither determinism nor rationality is promised
        stochastic=True,
        individually_rational=False,
        memory="one negotiator per negotiation, with whatever it keeps",
        long_run_time=True,
    )
    needs_protocol = True

    def __init__(
        self,
        side: int | str = SELLER,
        n_members: int = 1,
        *,
        protocol: Protocol | None = None,
        negotiator: str | type | None = None,
        negotiator_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(side, n_members)
        if negotiator is None or isinstance(negotiator, str):
            self.negotiator_class = resolve(self.family, negotiator or self.default_class)
        else:
            self.negotiator_class = negotiator
        if protocol is not None:
            check_game(self.negotiator_class.__name__, protocol)
        self.negotiator_params = dict(negotiator_params or {})
        self.params = {"negotiator": self.negotiator_class.__name__}
        self._sessions: dict[int, Session] = {}
        self._last_move = -1

    @classmethod
    def check_spec(cls, arg: str | None) -> None:
        resolve(cls.family, arg or cls.default_class)

    def _make_negotiator(self) -> Any:
        return self.negotiator_class(**self.negotiator_params)

    @classmethod
    def spec_params(cls, arg: str, side: int | str, protocol: Protocol) -> dict[str, Any]:
        """``negmas:CLASS``: that class, if it can play a game of this size."""
        check_game(arg, protocol)
        return {"negotiator": arg}

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        if obs.negotiation is None:
            raise ValueError(f"strategy {self.name!r} keeps one negotiator per negotiation and "
                             "needs Observation.negotiation (set by the protocol)")
        if obs.move <= self._last_move:  # the protocol started another batch
            self._sessions.clear()
        self._last_move = obs.move
        starts = obs.move == np.where(obs.first, 0, 1)
        out = np.empty(len(obs), dtype=np.int64)
        if starts.any():
            lo, hi = offer_bounds(self.side, obs)
            reservation = lo if self.side == SELLER else hi
            seeds = rng.integers(0, 2**63, len(obs))
        for i in range(len(obs)):
            key = int(obs.negotiation[i])
            if starts[i]:
                check_game(self.negotiator_class.__name__, obs.protocol)
                self._sessions[key] = Session(
                    self._make_negotiator, self.side, obs.protocol,
                    int(reservation[i]), bool(obs.first[i]), int(seeds[i]),
                )
            session = self._sessions.get(key)
            if session is None:
                raise RuntimeError(f"strategy {self.name!r} was asked to move in negotiation "
                                   f"{key} at move {obs.move} without having seen it start")
            out[i] = session.move(obs.move, int(obs.offer[i]))
        return out


class GeniusAgent(NegmasNegotiator):
    """Plays an ANAC agent of negmas-genius-agents (default HardHeaded), one per negotiation."""

    name = "genius"
    family = "genius"
    default_class = "HardHeaded"  # quick on small grids (AgentK searches for seconds)
    argument = "AGENT"
