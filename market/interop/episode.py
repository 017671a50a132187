"""One negotiation played move by move, as the PettingZoo and Gymnasium environments see it.

Both environments hand the game to outside agents one move at a time, which
:func:`market.game.protocol.negotiate` (a whole batch to the end) cannot do.
:class:`Episode` steps the protocol's own :class:`~market.game.protocol.Lockstep`
for a single negotiation instead, so who moves, what is legal and what an
action does are the protocol's rules, not a copy of them.

What an agent observes, a vector of four integers (all in the box
``0 .. [P, T, P, 1]``):

0. the opponent's last offer (level ``1..P``; 0 before it has offered),
1. the round of that offer counted from 1 (0 at the opening move): the
   ``t + 1`` of the protocol's observation ``(p, t)``,
2. its own last offer (0 before its first),
3. whether it moved first (1) or second (0),

and, beside it, the mask of the actions legal now (offers ``1..P``, accept,
reject; all zero when it is not its turn or the negotiation is over). A
tabular learner's row is ``market.game.qtable.row(protocol, offer, round - 1)``
in the role ``first``.

Rewards, at the end only: ``"two-agent"`` (the protocol's, as in the
original project: at a deal on level ``p`` the Seller gets ``p / P``, the
Buyer ``1 - p / P``; no deal gives both 0) or ``"surplus"`` (the market's:
the surplus over the reservation level, divided by the width of the grid,
``(p - floor) / (P - 1)`` for the Seller and ``(ceiling - p) / (P - 1)``
for the Buyer). Under the game's time pressure (:mod:`market.game.pressure`)
a side's reward for a deal on the ``k``-th offer is multiplied by its
discount factor to the power ``k``, and less ``k`` times its cost per offer,
as in the exact evaluator; and after a counter-offer the talks end with no
deal with the risk the game sets (drawn from the environment's generator).

An action the rules do not allow now is played as reject (the protocol's
walk-away), so an agent that ignores the mask still plays the game.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from market.errors import UsageError
from market.files import shown
from market.game import moves
from market.game.pressure import PRESSURE, Pressure
from market.game.protocol import Lockstep
from market.game.rules import (
    BUYER,
    SELLER,
    SIDE_NAMES,
    Negotiator,
    Observation,
    Protocol,
    level_rewards,
)

REWARDS = ("two-agent", "surplus")
FIRST = ("random", "seller", "buyer")


@dataclass(frozen=True)
class Settings:
    """The game an environment plays, checked once: P, T, ranges, first mover, rewards.

    Ranges are acceptable levels ``(lo, hi)`` with ``1 <= lo <= hi <= P``
    (default: the whole grid); ``first`` is ``"random"`` (drawn at every
    reset), ``"seller"`` or ``"buyer"``; ``pressure`` the game's time pressure
    (:class:`~market.game.pressure.Pressure`, checked by the game's
    :class:`~market.game.rules.Protocol`). The environments build it with
    :func:`settings_for`, from a ``protocol=`` or from their keywords.
    """

    prices: int = 5
    rounds: int = 5
    seller_range: tuple[int, int] | None = None
    buyer_range: tuple[int, int] | None = None
    first: str = "random"
    reward: str = "two-agent"
    pressure: Pressure = Pressure()

    def __post_init__(self) -> None:
        for name, value, lo in (("prices", self.prices, 2), ("rounds", self.rounds, 1)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
                raise UsageError(f"{name} must be an integer >= {lo} (got {value!r})")
        for name in ("seller_range", "buyer_range"):
            rng = getattr(self, name)
            if rng is None:
                object.__setattr__(self, name, (1, int(self.prices)))
                continue
            try:
                lo, hi = rng
            except (TypeError, ValueError):
                raise UsageError(f"{name} must be two levels (lo, hi) (got {rng!r})") from None
            if not all(_is_int(x) for x in (lo, hi)):  # 5.9 is no level (it was cut to 5)
                raise UsageError(f"{name} must be two integer levels (lo, hi) (got {rng!r})")
            lo, hi = int(lo), int(hi)
            if not 1 <= lo <= hi <= self.prices:
                raise UsageError(f"{name} must satisfy 1 <= lo <= hi <= P={self.prices} "
                                 f"(got {rng!r})")
            object.__setattr__(self, name, (lo, hi))
        if self.first not in FIRST:
            raise UsageError(f"first must be one of {', '.join(FIRST)} (got {self.first!r})")
        if self.reward not in REWARDS:
            raise UsageError(f"reward must be one of {', '.join(REWARDS)} (got {self.reward!r})")
        try:
            self.protocol  # noqa: B018  (the discounts' range, checked where the game is)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    @property
    def protocol(self) -> Protocol:
        return Protocol(int(self.prices), int(self.rounds), *self.pressure)

    def range_of(self, side: int) -> tuple[int, int]:
        return self.seller_range if side == SELLER else self.buyer_range  # type: ignore[return-value]

    def draw_first(self, rng: np.random.Generator) -> int:
        if self.first == "random":
            return int(rng.integers(0, 2))
        return SIDE_NAMES.index(self.first)

    def observation_high(self) -> np.ndarray:
        """The upper corner of the observation box (the lower is 0)."""
        return np.array([self.prices, self.rounds, self.prices, 1], dtype=np.int64)


class Episode:
    """One negotiation, advanced one move at a time through the protocol's :class:`Lockstep`."""

    def __init__(self, settings: Settings, first: int) -> None:
        self.settings = settings
        self.protocol = settings.protocol
        self.state = Lockstep(self.protocol, first, 1)
        self.history: list[tuple[int, int]] = []  # (side, action) of every move

    @property
    def first(self) -> int:
        return int(self.state.first[0])

    @property
    def done(self) -> bool:
        return self.state.done

    @property
    def mover(self) -> int:
        """The side to move (meaningless once :attr:`done`)."""
        return int(self.state.mover()[0])

    @property
    def level(self) -> int:
        """The deal level (0: none, or not over yet)."""
        return int(self.state.level[0])

    def observe(self, side: int) -> Observation:
        """The protocol's observation of ``side`` now (what a registered strategy sees)."""
        lo, hi = self.settings.range_of(side)
        one = lambda v: np.array([v], dtype=np.int64)  # noqa: E731
        return self.state.observe(side, np.zeros(1, dtype=np.intp), one(lo), one(hi),
                                  np.zeros(1, dtype=np.intp))

    def observation(self, side: int) -> np.ndarray:
        """The four numbers ``side`` observes now (see the module docstring)."""
        obs = self.observe(side)
        t = min(max(obs.t, -1), self.protocol.rounds - 1)
        return np.array([obs.offer[0], t + 1, obs.own[0], int(obs.first[0])], dtype=np.int64)

    def mask(self, side: int) -> np.ndarray:
        """Legal actions of ``side`` now, as 0/1 (all 0 when it is not its turn)."""
        if self.done or self.mover != side:
            return np.zeros(self.protocol.n_actions, dtype=np.int8)
        return self.protocol.legal(self.state.move).astype(np.int8)

    def play(self, action: int, rng: np.random.Generator | None = None) -> bool:
        """Play the mover's ``action``; an illegal one is played as reject. Returns legality.

        ``action`` must be an action of the space (:func:`action_index`); one the
        rules forbid at this move is the documented illegal move. ``rng``: the
        environment's generator, which draws whether the talks break down after a
        counter-offer (a game at risk of that needs it).
        """
        action = action_index(action, self.protocol.n_actions)
        legal = bool(self.state.legal(np.array([action]))[0])
        a = int(action) if legal else self.protocol.reject
        self.history.append((self.mover, a))
        self.state.play(np.array([a], dtype=np.int64), rng)
        return legal

    def play_strategy(self, strategy: Negotiator, rng: np.random.Generator) -> None:
        """Let a registered strategy make the mover's move (it plays only legal actions)."""
        a = np.asarray(strategy.act(self.observe(self.mover), rng), dtype=np.int64)
        if a.shape != (1,) or not self.state.legal(a)[0]:
            name = getattr(strategy, "name", type(strategy).__name__)
            raise RuntimeError(f"strategy {name!r} played an illegal action at move "
                               f"{self.state.move}")
        self.play(int(a[0]), rng)

    def rewards(self) -> tuple[float, float]:
        """(Seller, Buyer) rewards of the outcome so far (0, 0 until a deal)."""
        p = self.level
        if p == 0:
            return 0.0, 0.0
        if self.settings.reward == "two-agent":
            s, b = (float(x) for x in level_rewards(np.array([p]), self.protocol.prices)[:, 0])
        else:
            width = self.protocol.prices - 1
            floor, ceiling = self.settings.seller_range[0], self.settings.buyer_range[1]  # type: ignore[index]
            s, b = (p - floor) / width, (ceiling - p) / width
        k = len(self.history) - 2  # the offer accepted (at move len(history) - 1)
        pressure = self.protocol.pressure
        return (float(moves.worth(s, SELLER, k, pressure, 1.0)),
                float(moves.worth(b, BUYER, k, pressure, 1.0)))

    def render(self) -> str:
        """The moves so far as text, one per line."""
        P = self.protocol.prices
        lines = []
        for m, (side, a) in enumerate(self.history):
            what = f"offers {a + 1}" if a < P else ("accepts" if a == P else "rejects")
            lines.append(f"move {m}: {SIDE_NAMES[side]} {what}")
        if self.done:
            lines.append(f"DEAL at {self.level}" if self.level else "NO DEAL")
        return "\n".join(lines)


def settings_for(protocol: Protocol | None, prices: int | None, rounds: int | None,
                 seller_range: tuple[int, int] | None, buyer_range: tuple[int, int] | None,
                 first: str, reward: str, **pressure: float | None) -> Settings:
    """An environment's settings: the game from ``protocol`` (a
    :class:`~market.game.rules.Protocol`: its sizes and its whole time pressure, so a new
    kind of pressure reaches every environment through it), or, as a convenience, from
    ``prices``, ``rounds`` (default 5 each) and the pressure keywords given (``None``: the
    default). Giving both is refused, naming them; a keyword that is no kind of pressure is
    refused as Python refuses an unknown keyword."""
    unknown = sorted(set(pressure) - {d.name for d in PRESSURE})
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (the game's time pressure: "
                        f"{', '.join(d.name for d in PRESSURE)})")
    given = {k: v for k, v in pressure.items() if v is not None}
    if protocol is None:
        return Settings(5 if prices is None else prices, 5 if rounds is None else rounds,
                        seller_range, buyer_range, first, reward, Pressure(**given))
    if not isinstance(protocol, Protocol):
        raise UsageError(f"protocol must be a market.game.rules.Protocol "
                         f"(got {shown(repr(protocol), 60)})")
    both = [n for n, v in (("prices", prices), ("rounds", rounds)) if v is not None]
    if both or given:
        raise UsageError(f"give the game as protocol= or as keywords, not both (got protocol= "
                         f"and {', '.join(both + sorted(given))})")
    return Settings(protocol.prices, protocol.rounds, seller_range, buyer_range, first, reward,
                    protocol.pressure)


def pressure_keywords(init: Callable[..., None]) -> Callable[..., None]:
    """Decorator: an environment's ``__init__`` takes the game's time pressure as ``**pressure``,
    one keyword per declaration of :mod:`market.game.pressure` (``None``: its default); its
    signature shows them, for ``help``, editors and the API reference."""
    sig = inspect.signature(init)
    own = [q for q in sig.parameters.values() if q.kind != q.VAR_KEYWORD]
    declared = [inspect.Parameter(d.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation=float | None) for d in PRESSURE]
    init.__signature__ = sig.replace(parameters=[*own, *declared])  # type: ignore[attr-defined]
    return init


def _is_int(x: object) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def action_index(action: object, n_actions: int) -> int:
    """An action of the space ``Discrete(n_actions)``, as an ``int``; ``ValueError`` naming
    the argument otherwise.

    Accepted, as Gymnasium's and PettingZoo's samplers give them: a Python or
    numpy integer, or an integer array of one element. Refused rather than
    guessed: floats (``2.7`` is not action 2), strings, booleans, and integers
    outside ``0 .. n_actions - 1``.
    """
    a = action
    if isinstance(a, np.ndarray) and a.size == 1 and a.dtype.kind in "iu":
        a = a.reshape(-1)[0]
    if not _is_int(a) or not 0 <= int(a) < n_actions:
        raise ValueError(f"action must be an integer in [0, {n_actions - 1}] "
                         f"(got {shown(repr(action), 60)})")
    return int(a)


def check_seed(seed: object) -> int | None:
    """``reset(seed=...)``: None or a non-negative integer (numpy's rule), else ``ValueError``."""
    if seed is None:
        return None
    if not _is_int(seed) or int(seed) < 0:
        raise ValueError(f"seed must be None or an integer >= 0 (got {shown(repr(seed), 60)})")
    return int(seed)
