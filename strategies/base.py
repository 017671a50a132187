"""What every strategy is: a small class with a name, a classifier and a batch decision.

A strategy object plays one side for a *population* of ``n_members``
traders that share the same rule (one member in the two-agent game, many in
a market). Its :meth:`Strategy.act` receives a batch of observations (one row
per negotiation in which one of its members moves) and returns one action
index per row, so the protocol never loops over traders in Python.

Strategies know the protocol's observation and action encoding, nothing of
Mesa or of the market.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from market.compiled import build
from market.compiled.jit import njit
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Observation, Protocol, side_index


@dataclass
class KernelState:
    """What the compiled market engine reads (and a learner's, writes) of one population.

    One layout for every strategy, so the engine needs no case per strategy:
    ``params``: per-member parameters ``(n_members, k)`` (a concession exponent,
    a learner's rates); ``tables``: a learner's Q-tables ``(n_members, slots, S, A)``;
    ``table``: an action table (``spe``: action per role and row); ``played``:
    negotiations each member has learned from; ``wait``: a market learner's wait
    values ``(n_members, buckets)``; ``config``: integer switches (a learner's
    ``learning, market, rational, buckets, roles``). The arrays are the
    strategy's own, not copies, so what the engine learns the strategy knows.
    """

    params: np.ndarray = field(default_factory=lambda: np.zeros((1, 0)))
    tables: np.ndarray = field(default_factory=lambda: np.zeros((1, 1, 1, 1)))
    table: np.ndarray = field(default_factory=lambda: np.zeros((1, 1), dtype=np.int64))
    played: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    wait: np.ndarray = field(default_factory=lambda: np.zeros((1, 1)))
    config: np.ndarray = field(default_factory=lambda: np.zeros(8, dtype=np.int64))


# Inside the compiled engine every population's arrays live in two flat stores (floats,
# integers); a layout table holds, per population (row ``g``), each array's offset and shape
# at these columns. The functions below give the flat index of one cell, so compiled
# decisions read and write their arrays without making array views (each view costs two
# atomic reference counts, which cost more than a move).
PARAMS, TABLES, WAIT, TABLE, PLAYED = 0, 3, 8, 11, 14
LAYOUT_COLUMNS = 16


@njit(cache=True, inline="always")
def param_at(layout: np.ndarray, g: int, m: int, j: int) -> int:
    """Flat index of ``params[m, j]`` of population ``g`` (float store)."""
    return layout[g, PARAMS] + m * layout[g, PARAMS + 2] + j


@njit(cache=True, inline="always")
def q_at(layout: np.ndarray, g: int, m: int, slot: int, row: int, a: int) -> int:
    """Flat index of ``tables[m, slot, row, a]`` of population ``g`` (float store)."""
    return layout[g, TABLES] + ((m * layout[g, TABLES + 2] + slot) * layout[g, TABLES + 3]
                                + row) * layout[g, TABLES + 4] + a


@njit(cache=True, inline="always")
def wait_at(layout: np.ndarray, g: int, m: int, b: int) -> int:
    """Flat index of ``wait[m, b]`` of population ``g`` (float store)."""
    return layout[g, WAIT] + m * layout[g, WAIT + 2] + b


@njit(cache=True, inline="always")
def table_at(layout: np.ndarray, g: int, r: int, c: int) -> int:
    """Flat index of ``table[r, c]`` of population ``g`` (integer store)."""
    return layout[g, TABLE] + r * layout[g, TABLE + 2] + c


@njit(cache=True, inline="always")
def played_at(layout: np.ndarray, g: int, m: int) -> int:
    """Flat index of ``played[m]`` of population ``g`` (integer store)."""
    return layout[g, PLAYED] + m


#: what the market clock changes for a learner: both of its parts, or one alone (the order
#: is the compiled learner's numbering)
CLOCK_PARTS = ("both", "state", "wait")


@dataclass(frozen=True)
class MarketSetting:
    """What a market tells the strategies it builds (see :meth:`Strategy.for_market`).

    ``rational``: traders never take an action that could lose them money;
    ``clock_buckets``: the market clock's time-left slots (1: no clock);
    ``clock_parts``: which of the clock's changes learners get (``"both"``,
    ``"state"``: the steps left in the state only, ``"wait"``: the value of
    waiting only);
    ``learner_params``: ``"fixed"`` or ``"drawn"`` per member;
    ``loyal_state``: learners see whether the pair bargaining is a loyal one
    (partner choice); ``rng``: the market's generator, for anything drawn when
    the population is built.
    """

    rational: bool = True
    clock_buckets: int = 1
    clock_parts: str = "both"
    learner_params: str = "fixed"
    loyal_state: bool = False
    rng: np.random.Generator | None = None


@dataclass(frozen=True)
class Classifier:
    """What a strategy's rule is, after the Axelrod library's classifier: a strategy states
    only what differs from these defaults.

    ``sides``: which sides it can play; ``learns``: updates itself from
    outcomes; ``stochastic``: its decisions depend on the random stream;
    ``individually_rational``: never agrees to a price outside its
    reservation range. The promise is about the price, as Gode and Sunder's
    budget constraint is: under costs per offer (a time pressure of the game,
    paid only on a deal) a deal at an acceptable price late in the talks can
    still leave a trader below 0 once its costs are counted; no built-in rule
    weighs the costs it has paid; ``memory``: what it remembers beyond the current
    observation; ``long_run_time``: plays at another library's pace, one
    negotiation at a time, so default line-ups (the tournament's) leave it
    out unless named; ``objective``: what it maximises.

    Reads as a mapping too (``classifier["learns"]``, ``.get``), as the
    dictionaries of earlier versions and of users' strategies do.
    """

    sides: tuple[str, ...] = ("seller", "buyer")
    learns: bool = False
    stochastic: bool = False
    individually_rational: bool = True
    memory: str = "none"
    long_run_time: bool = False
    objective: str = "own surplus"

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.__dataclass_fields__ else default

    def __iter__(self) -> Any:
        return iter(self.__dataclass_fields__)

    def keys(self) -> Any:
        return self.__dataclass_fields__.keys()


class Strategy:
    """Base class. Subclasses set ``name``, ``classifier`` and a decision: a compiled rule
    (:class:`strategies.rule_based.RuleBased`, :class:`strategies.compiled.Compiled`), or a
    Python :meth:`act` (which plays on the lockstep path only).

    ``classifier``: a :class:`Classifier` stating what differs from its
    defaults (a plain dictionary of the same keys works too).
    """

    name: ClassVar[str] = ""
    classifier: ClassVar[Classifier | dict[str, Any]] = Classifier()
    #: whether the constructor takes ``protocol=`` (table sizes, schedules)
    needs_protocol: ClassVar[bool] = False
    #: what a spec may give after ``NAME:`` (e.g. ``"FILE.npz"``); empty: nothing
    argument: ClassVar[str] = ""
    #: plays a pair of Q-tables trained in the two-agent game (``tables=``): a tournament
    #: hands it the user's (``--qtable``) or tables trained by self-play
    plays_trained_tables: ClassVar[bool] = False
    #: the attributes that hold one row per member (first axis): what a trader carries into
    #: a population it joins (:meth:`seat`); empty for strategies whose members are alike
    member_arrays: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Read the digest of a user's files the class comes from, as they are now: the
        compiled code made from its rule is named by it, even if a file is edited later in
        this process's life (:func:`market.compiled.build.pin`)."""
        super().__init_subclass__(**kwargs)
        with contextlib.suppress(TypeError, OSError):
            build.pin(inspect.getfile(cls))
        own = cls.__dict__.get("classifier")
        if isinstance(own, dict):  # a plain dict states only its differences, as a Classifier
            known = set(Classifier.__dataclass_fields__)
            unknown = sorted(set(own) - known)
            if unknown:
                raise TypeError(f"strategy {cls.name or cls.__name__!r}: its classifier names "
                                f"{unknown[0]!r}, which is none of {', '.join(sorted(known))}")
            cls.classifier = Classifier(**own)

    def __init__(self, side: int | str = SELLER, n_members: int = 1, **params: Any) -> None:
        self.side = side_index(side) if isinstance(side, str) else int(side)
        if self.side not in (SELLER, BUYER):
            raise ValueError(f"side must be 0 (seller) or 1 (buyer), got {side!r}")
        if SIDE_NAMES[self.side] not in self.classifier["sides"]:
            raise ValueError(f"strategy {self.name!r} cannot play the {SIDE_NAMES[self.side]} side")
        if int(n_members) < 1:
            raise ValueError(f"n_members must be >= 1 (got {n_members})")
        self.n_members = int(n_members)
        self.params: dict[str, Any] = dict(params)

    # --- what a spec's argument means (see :mod:`strategies.specs`) -----------------
    @classmethod
    def check_spec(cls, arg: str | None) -> None:
        """Refuse ``NAME`` or ``NAME:arg`` before any work (``ValueError`` naming the fix).

        The spec parser calls it for every spec, so a strategy whose argument
        names something that must exist (a class of another library) or that
        needs an optional dependency is refused by every command alike.
        """

    @classmethod
    def spec_params(cls, arg: str, side: int | str, protocol: Protocol) -> dict[str, Any]:
        """Constructor parameters for ``NAME:arg``; ``ValueError`` if ``arg`` is unusable."""
        raise ValueError(f"strategy {cls.name!r} takes no argument (got {arg!r})")

    @classmethod
    def spec_game(cls, arg: str) -> Protocol | None:
        """The game ``arg`` fixes (a saved table's P and T), None if it fixes none."""
        return None

    # --- what a market asks of it ------------------------------------------------------
    @classmethod
    def for_market(cls, side: int, n_members: int, protocol: Protocol, market: MarketSetting,
                   arg: str | None = None, params: dict[str, Any] | None = None) -> Strategy:
        """The population a market builds of this strategy: ``n_members`` traders of
        ``side``, from the spec's argument ``arg`` and the market's ``params`` for it.

        By default the strategy as every command builds it (the argument's
        parameters win over ``params``); a strategy that needs something of the
        market (the learners: their parameters, rationality, the clock) says
        so here, so the market names no strategy.
        """
        params = dict(params or {})
        if arg is not None:
            params.update(cls.spec_params(arg, side, protocol))
        if cls.needs_protocol:
            params["protocol"] = protocol
        return cls(side, n_members, **params)

    @classmethod
    def market_table_cells(cls, protocol: Protocol, market: MarketSetting) -> int:
        """Table cells (float64) one member allocates in a market, for the market's memory
        estimate before it is built (0: none worth counting)."""
        return 0

    @classmethod
    def market_tables_written(cls, market: MarketSetting) -> bool:
        """Whether its fresh tables are written before the engine gathers them, so that two
        copies live at once (False: zero pages the system gives only when written)."""
        return False

    @classmethod
    def market_build_bytes(cls, protocol: Protocol) -> int:
        """Bytes a population needs once, while it is built, beyond its tables (a solve of
        its game, say), for the market's memory estimate (0: none worth counting)."""
        return 0

    # --- decisions ---------------------------------------------------------------
    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def learn(
        self,
        record: BatchRecord,
        rows: np.ndarray,
        member: np.ndarray,
        reward: np.ndarray,
        time_left: np.ndarray | None = None,
    ) -> None:
        """Update from finished negotiations (rows of ``record`` this strategy played).

        ``reward`` is each row's payoff; ``time_left`` the steps left in the
        trading period when the negotiation began (market clock), if any.
        No-op for strategies that do not learn.
        """

    def kernel_state(self) -> KernelState:
        """This population's arrays for its compiled decision (:mod:`strategies.compiled`)."""
        return KernelState()

    def adopt(self, state: KernelState) -> None:
        """Take the engine's copies of :meth:`kernel_state`'s arrays as this population's own.

        The engine keeps every population's arrays in one store; a strategy
        whose arrays change while it plays (a learner's tables) points its
        attributes at those copies, so that both read and write the same
        numbers. Strategies whose arrays never change need nothing.
        """

    # --- who its members are -------------------------------------------------------------
    def seat(self, members: np.ndarray, source: Strategy, rows: np.ndarray,
             size: int | None = None) -> bool:
        """Members ``members`` take the state of ``source``'s members ``rows``; True if the
        population grew (its arrays are new: whoever plays from them must bind again).

        How a trader changes strategy without rebuilding its market: it takes
        a member slot of its new population (one left by a trader who moved
        away, or one past the end) with the state of a fresh member
        (``source`` a newly built population of the same spec) or of a member
        it copies (``source`` this population). Slots within the population
        are written in place, into the arrays the engine reads (each attribute
        of :attr:`member_arrays` is one of them, adopted); slots past the end
        grow every such array to ``size`` members (at least enough for them).
        """
        members = np.asarray(members, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        need = int(members.max()) + 1 if members.size else 0
        grow = need > self.n_members
        n = max(need, size or 0) if grow else self.n_members
        for attr in self.member_arrays:
            theirs = np.asarray(getattr(source, attr))[rows]  # a copy: source may be self
            mine = getattr(self, attr)
            if grow:
                grown = np.zeros((n, *mine.shape[1:]), dtype=mine.dtype)
                grown[:mine.shape[0]] = mine
                setattr(self, attr, grown)
                mine = grown
            mine[members] = theirs
        self.n_members = n
        return grow

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({SIDE_NAMES[self.side]}, n_members={self.n_members}{extra})"
