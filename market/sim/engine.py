"""The market's two engines: the compiled step, and the lockstep path for everything else.

A market step is thousands of tiny decisions; numpy's per-call overhead on
each move of each strategy group was nearly all of its cost. When every
strategy of the market has a compiled decision (:mod:`strategies.compiled`:
every built-in one, and any user's strategy written as a rule),
:class:`CompiledEngine` runs the whole step in one numba call,
:func:`market.sim.kernel.market_step`: pairing, the game's negotiation loop
(:mod:`market.game.loops`), settling, paying and the learners' updates, on the
model's own arrays. It is generated for the market's strategies
(:func:`compiled_module`) and calls each strategy's own compiled module,
which numba links into the step and optimises with it: a user's rule runs at
the speed of a built-in, and compiles alone, with the loops, in a few
seconds.

Otherwise (a ``negmas:`` or ``genius:`` strategy, a class that decides in
Python) :class:`LockstepEngine` runs the step: the same compiled pairing,
settling and paying, with the negotiation in :func:`~market.game.protocol.negotiate`
(each strategy's ``act``) and learning through each strategy's ``learn``.
The model says which once, through ``MarketModel.engine``.

Both give the same tables from the same seed, bit for bit: a compiled
strategy's ``act`` and ``learn`` run the same generated code on its own rows
(the same draws from the same numpy ``Generator``: numba shares its bit
generator), groups are visited in the same order, and the market's own
rules are the same compiled functions. The tests run both paths on every
built-in strategy, on random mixes and on the documentation's user strategy.
"""

from __future__ import annotations

import importlib
import math
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from market import compiled_game
from market.compiled import jit
from market.errors import CompileError, Notice
from market.game import loops
from market.game import protocol as lockstep
from market.game.moves import OPEN_RANDOM
from market.game.pressure import Pressure
from market.game.protocol import Side
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER
from market.processes import compiled_code
from market.sim import exchange, institutions, ledger
from market.sim.kernel import Rules
from market.sim.periods import Periods
from market.sim.state import Market
from strategies import compiled
from strategies.base import KernelState, Strategy
from strategies.stores import stores

#: the compiled loops a market's module holds: the game's negotiation loop, inlined into the
#: market's bilateral step, and every institution's step (:mod:`market.sim.institutions`;
#: numba compiles each on its first call)
TEMPLATES = (loops, *(importlib.import_module(name) for name in institutions.templates()))

#: the two-agent game, compiled (the tournament's and the report's): the game's own
negotiate = compiled_game.negotiate


def compiled_module(strategies: Sequence[Strategy] = (),
                    on_compile: Callable[[], None] | None = None,
                    institution: str = "pairs") -> types.ModuleType:
    """The generated module that runs a market of these strategies (and every built-in one)
    compiled: :func:`market.compiled_game.compiled_module` with the market's steps
    (:data:`TEMPLATES`), built on first use (``on_compile`` is called first, only then), the
    ``institution``'s step among them."""
    label = f"the market engine for {institutions.get(institution).words}"
    return compiled_game.compiled_module(strategies, on_compile,
                                         lambda module: step_calls(module, institution),
                                         TEMPLATES, label)


def ensure_compiled(on_compile: Callable[[], None] | None = None) -> None:
    """Build the built-in strategies' market engine and two-agent game (once per build)."""
    compiled_module((), on_compile)
    compiled_game.ensure_compiled(on_compile)


def build_all(names: Sequence[str] = ("pairs",),
              on_compile: Callable[[], None] | None = None) -> dict[str, float]:
    """Build ahead what first runs would: the training kernel (in a process beside this one,
    on the other core), the two-agent game and the market engine of each of
    ``names`` (institutions), for the built-in strategies. Returns the seconds each took."""
    import subprocess
    import sys
    import time

    from market.processes import deferred_signals, preexec_die_with_parent

    took: dict[str, float] = {}
    started = time.perf_counter()
    with deferred_signals():  # a signal cannot cut the child's start in half
        kernel = subprocess.Popen([sys.executable, "-c", "from market.game.train_kernel import "
                                   "ensure_compiled; ensure_compiled(lambda: None)"],
                                  stderr=subprocess.DEVNULL, preexec_fn=preexec_die_with_parent)
    try:
        compiled_game.ensure_compiled(on_compile)
        took["two-agent game"] = time.perf_counter() - started
        for institution in names:
            t = time.perf_counter()
            compiled_module((), on_compile, institution)
            took[f"market engine ({institution})"] = time.perf_counter() - t
    except BaseException:  # Ctrl-C, a failed compile: the kernel's process ends with it
        kernel.kill()
        kernel.wait()
        raise
    if kernel.wait() != 0:
        raise CompileError("numba cannot compile the training kernel on this machine")
    took["training kernel"] = time.perf_counter() - started
    return took


def step_calls(module: types.ModuleType, institution: str) -> dict[str, Callable[[], object]]:
    """The ``institution``'s step, to be called on one step of a tiny market; its arguments
    are made only when it is."""
    return {institutions.get(institution).entry: lambda: _tiny_step(module, institution)}


def _tiny_step(module: types.ModuleType, institution: str) -> None:
    n = 2
    f, i = np.zeros(n), np.zeros(n, dtype=np.int64)

    def side() -> tuple:
        return (f.copy(), i.copy(), i.copy(), i.copy(), f.copy(), f.copy(), i.copy(),
                np.zeros(n, np.bool_), np.ones(n, np.int64), np.full(n, 2, np.int64))

    store, _ = stores([KernelState(), KernelState()])  # one strategy a side
    rules = Rules(2, 1, OPEN_RANDOM, 0.0, 1.0, 1.0, Pressure()).plain()
    kinds = np.zeros(2, np.int64)
    rng = np.random.default_rng(0)  # alive while its handle is used
    draws = jit.rng_handle(rng)  # typed as CompiledEngine.steps passes it
    how = institutions.get(institution)
    getattr(module, how.entry)(1, rules, (0, 1, False), 0.5, side(), side(),
                               np.zeros(0, np.int64), kinds, 1, store.arrays, draws,
                               how.smoke(n, 2))


@dataclass
class StepResult:
    """One step's pairs and what came of them (the model enters it in its books)."""

    sellers: np.ndarray
    buyers: np.ndarray
    record: BatchRecord | None = None
    prices: np.ndarray | None = None
    deal: np.ndarray | None = None
    seller_gain: np.ndarray | None = None
    buyer_gain: np.ndarray | None = None
    #: what the ledger enters of the step (:func:`~market.sim.ledger.settle_sums`)
    sums: tuple | None = None
    #: both sides' :func:`~market.sim.ledger.earnings_sums` as the step ended, when the
    #: compiled step made them (None: read them from the arrays)
    earnings: tuple | None = None

    @property
    def levels(self) -> np.ndarray | None:
        """The deals' levels, in pair order (None when nobody met)."""
        return None if self.record is None else self.record.level[self.deal]

    @property
    def pairs(self) -> int:
        """How many pairs negotiated."""
        return len(self.sellers)

    @property
    def last(self) -> StepResult:
        """What ``model.last_step`` keeps of the step: this result itself (a compiled call's
        is a :class:`Packed`, made into one when read)."""
        return self

    @property
    def result(self) -> StepResult:
        """The step's pairs and what came of them: this result itself."""
        return self

    def last_record(self) -> tuple[int, tuple | None, np.ndarray | None, tuple | None]:
        """The step as the model records it (:meth:`Steps.last_record`)."""
        return len(self.sellers), self.sums, self.levels, self.earnings


class LockstepEngine:
    """The step with each strategy's Python ``act`` and ``learn`` (any strategy at all)."""

    name = "lockstep"
    #: whether steps may be made several in a call (:func:`in_one_call`)
    in_calls = False

    def rebind(self, m: Market) -> None:
        """Nothing to do: each strategy reads its own arrays when it acts."""

    def step(self, m: Market, r: int, rng: np.random.Generator, centre: float = math.nan
             ) -> StepResult:
        """Step ``r`` of the period (from 0); the ledger's sums about ``centre`` (the period's
        competitive price)."""
        S, B = m.books
        time_left = time_left_at(m, r)
        ps, pb = exchange.pair(S.traded, B.traded, rng)
        if ps.size == 0:
            return StepResult(ps, pb)
        first = exchange.openers(ps.size, m.open_mode, rng)
        (s_lo, b_lo), (s_hi, b_hi) = m.levels
        tl = None if time_left < 0 else np.full(ps.size, time_left, dtype=np.int64)
        record = lockstep.negotiate(
            m.protocol,
            Side(m.strategies[SELLER], S.strategy[ps], S.member[ps], s_lo[ps], s_hi[ps]),
            Side(m.strategies[BUYER], B.strategy[pb], B.member[pb], b_lo[pb], b_hi[pb]),
            first, rng, tl)
        prices, deal, gain_s, gain_b = exchange.settle_deals(
            ps, pb, record.level, record.n_moves, (m.grid.lo, m.grid.step, m.span),
            m.protocol.pressure, S.ledger_arrays, B.ledger_arrays)
        reward = exchange.pay(deal, gain_s, gain_b, m.span, S.team[ps], B.team[pb], m.pooled)
        exchange.learn(m.strategies, m.books, ps, pb, record, reward, tl)
        sums = ledger.settle_sums(prices, gain_s, gain_b, *exchange.deal_reservations(
            ps, pb, deal, S.reservation, B.reservation), centre)
        return StepResult(ps, pb, record, prices, deal, gain_s, gain_b, sums)


class CompiledEngine:
    """The step in one compiled call; for markets whose every strategy has a compiled form."""

    name = "compiled"

    def __init__(self, m: Market) -> None:
        self._market = m
        p = m.params  # what never changes in a market (:func:`in_one_call`)
        self.in_calls = p.teams is None and p.agent_data != "step"
        self._strategies: tuple[Strategy, ...] = ()
        self._draws = jit.Handles()  # the generator as the compiled step takes it
        self.rebind(m)

    def rebind(self, m: Market) -> None:
        """Every population's arrays into one store again (after traders changed strategy);
        the module and the kinds are looked up again only if a population was added."""
        everyone = (*m.strategies[SELLER], *m.strategies[BUYER])
        if everyone != self._strategies:
            for strat in everyone:
                if not compiled.has_form(strat):
                    raise ValueError(f"strategy {strat.name!r} has no compiled decision")
            self.module = compiled_module(everyone, institution=m.params.institution)
            self._entry = getattr(self.module, m.institution.entry)
            self.kinds = np.array([compiled.kind_in(self.module, s) for s in everyone],
                                  dtype=np.int64)
            self.n_groups_s = len(m.strategies[SELLER])
            self._strategies = everyone
        self.store, views = stores([s.kernel_state() for s in everyone])
        for g, (strat, view) in enumerate(zip(everyone, views, strict=True)):
            strat.bind(self.store, g, view)

    def __getstate__(self) -> dict[str, Market]:
        """Pickled as its market; the stores are rebuilt (and adopted again) on loading."""
        return {"market": self._market}

    def __setstate__(self, state: dict[str, Market]) -> None:
        self.__init__(state["market"])  # type: ignore[misc]

    def step(self, m: Market, r: int, rng: np.random.Generator, centre: float = math.nan
             ) -> Steps:
        """Step ``r`` of the period (from 0): one of :meth:`steps`, its negotiations made when
        read; an illegal action raised."""
        made = self.steps(m, r, 1, rng, centre)
        if made.error is not None:
            raise made.error
        return made

    def steps(self, m: Market, r: int, k: int, rng: np.random.Generator, centre: float
              ) -> Steps:
        """``k`` steps of the market from step ``r`` of the period (on into the next periods if
        ``k`` reaches past its end) in one compiled call of its institution's step
        (:func:`~market.sim.kernel.market_step`'s convention): their rows
        (:meth:`Steps.parts`, :meth:`Steps.last_record`), and the last one's negotiations."""
        S, B = m.books
        (s_lo, b_lo), (s_hi, b_hi) = m.levels
        sides = S.kernel_arrays(s_lo, s_hi), B.kernel_arrays(b_lo, b_hi)
        draws = self._draws(rng)
        try:
            with compiled_code():
                done, rows, levels, offsets, packed, actions, bad, bad_g = self._entry(
                    k, m.plain_rules, (r, m.params.period, m.params.clock), centre, *sides,
                    m.pooled, self.kinds, self.n_groups_s, self.store.arrays, draws,
                    m.institution.state(m))
        except Exception as exc:
            raise compiled_game.rule_failed(self._strategies, exc) from exc
        error = None if bad < 0 else compiled_game.illegal(self._strategies[bad_g], bad)
        # a trader that changed strategy: the model reads earnings as it counts them
        moved = m.books[SELLER].moved or m.books[BUYER].moved
        return Steps(done, rows, levels, offsets, m.strategy_names(),
                     None if error else Packed(m, packed, actions), error, not moved)


def _result(m: Market, packed: np.ndarray, actions: np.ndarray) -> StepResult:
    """A compiled step's packed results (:func:`~market.sim.kernel.packed`) as a
    :class:`StepResult`."""
    ints = packed[:5].astype(np.int64)  # exact: indices and levels are far below 2**53
    ps, pb = ints[0], ints[1]
    if ps.size == 0:
        return StepResult(ps, pb)
    level = ints[3]
    deal = level > 0
    k = int(np.count_nonzero(deal))
    record = BatchRecord(m.protocol, actions, ints[2].astype(np.int8), level, ints[4])
    return StepResult(ps, pb, record, packed[5], deal, packed[6, :k], packed[7, :k])


@dataclass
class Packed:
    """The last step of a compiled call as its kernel packed it (:func:`~market.sim.kernel.packed`,
    and its actions), made into its :class:`StepResult` only when read (the view and the
    traces read it, a run seldom does): what ``model.last_step`` keeps, not the call's rows."""

    market: Market
    packed: np.ndarray
    actions: np.ndarray

    @property
    def pairs(self) -> int:
        """How many pairs negotiated."""
        return self.packed.shape[1]

    @cached_property
    def result(self) -> StepResult:
        """The step's pairs and what came of them."""
        return _result(self.market, self.packed, self.actions)


@dataclass
class Steps:
    """Steps made in one compiled call (:meth:`CompiledEngine.steps`): ``done`` of them, a row
    each (:func:`~market.sim.kernel.market_step`), the deals' levels of each, each side's
    strategy names (they do not change within a call), the last step (None after an illegal
    action), the error to raise after the steps made are recorded (an illegal action), and
    whether the rows' earnings are the books' (no trader has changed strategy: else the
    model reads them from the arrays)."""

    done: int
    rows: np.ndarray
    levels: np.ndarray
    offsets: np.ndarray
    names: tuple[tuple[str, ...], tuple[str, ...]]
    last: Packed | None
    error: Exception | None
    own_earnings: bool = True

    def parts(self, periods: Periods) -> list[tuple[np.ndarray, np.ndarray]]:
        """The steps made, a period's part at a time (``periods``: where the first stands in
        the market's schedule): each part's rows, and where its steps' deal levels begin (and
        the last ends) in :attr:`levels`."""
        if self.done == len(self.rows) and self.done <= periods.left:  # a step(), a period
            return [(self.rows, self.offsets)]
        return [(self.rows[a:a + n], self.offsets[a:a + n + 1])
                for a, n in periods.parts(self.done)]

    def last_record(self) -> tuple[int, tuple | None, np.ndarray | None, tuple | None]:
        """The last step made, as the model records it: its pairs, its
        :func:`~market.sim.ledger.settle_sums` and its deals' levels (None when nobody met),
        and both sides' :func:`~market.sim.ledger.earnings_sums` as it ended (None: read
        them from the arrays)."""
        j = self.done - 1
        pairs, sums, sellers, buyers = ledger.read_row(self.rows[j].tolist(), self.names)
        levels = self.levels[self.offsets[j]:self.offsets[j + 1]] if pairs else None
        return pairs, sums, levels, (sellers, buyers) if self.own_earnings else None


def in_one_call(engine: CompiledEngine | LockstepEngine, m: Market) -> bool:
    """Whether the market's next steps can be made in one compiled call
    (:meth:`CompiledEngine.steps`): the compiled engine in bilateral bargaining, and nothing
    the steps in between would have to show (agent data every step, common wallets' team
    figures, earnings of a trader that changed strategy: the model reads those from the
    traders' arrays as they stand)."""
    return engine.in_calls and not (m.books[SELLER].moved or m.books[BUYER].moved)


#: at most this many steps in one compiled call (its rows: a few dozen numbers a step)
CALL_STEPS = 10_000
#: room for at most this many deals' levels in one compiled call (8 bytes each; a trader
#: deals once a period)
CALL_DEALS = 1_000_000


def across_periods(m: Market) -> bool:
    """Whether one compiled call may run on into the next periods (:func:`in_one_call`
    holding): nothing happens between periods but everybody holding a unit again, which
    the call does itself (no values redrawn, no strategy revised, no agent data due at a
    period's end, no partner figures to read as it closes)."""
    p = m.params
    return (not p.redraw and p.revision == "none" and p.agent_data == "none"
            and not m.partners.loyalty)


def call_steps(m: Market, r: int, wanted: int) -> int:
    """How many of ``wanted`` steps the next compiled call makes from step ``r`` of the
    period: to the period's end, or on across periods (:func:`across_periods`) while its
    buffers stay small (:data:`CALL_STEPS`, :data:`CALL_DEALS`)."""
    K = m.params.period
    if not across_periods(m):
        return min(wanted, K - r)
    periods = max(1, CALL_DEALS // max(1, min(len(book) for book in m.books)))
    return min(wanted, CALL_STEPS, K - r + (periods - 1) * K)


def time_left_at(m: Market, r: int) -> int:
    """The steps left in the period at its step ``r``, as learners see them on the market
    clock (-1: no clock)."""
    return m.params.period - r if m.params.clock else -1


def choose(strategies: tuple[Sequence[Strategy], Sequence[Strategy]], engine: str = "auto",
           institution: str = "pairs", matching: str = "random", network: bool = False
           ) -> tuple[type[CompiledEngine] | type[LockstepEngine], list[str]]:
    """The engine class for these strategies, and the names of those without a compiled form.

    ``engine``: ``auto`` (compiled when every strategy has a compiled
    decision), ``compiled`` (refused, naming them, when some have none) or
    ``lockstep``. A double auction and a call market run compiled only (their
    strategies are compiled rules, which :func:`market.sim.params.check` holds), and so
    does partner choice (``matching`` ``loyalty``: its rounds are compiled), and a
    ``network`` of who may meet whom.
    """
    missing = [getattr(s, "name", type(s).__name__) or type(s).__name__
               for side in strategies for s in side if not compiled.has_form(s)]
    if (matching != "random" or network) and (engine == "lockstep" or missing):
        why = ("engine 'lockstep'" if engine == "lockstep" else
               f"{', '.join(sorted(set(missing)))} (no compiled decision)")
        what = f"matching {matching!r}" if matching != "random" else "a network"
        raise ValueError(f"{what} runs on the compiled engine, with compiled strategies "
                         f"only; not with {why}")
    if not institutions.get(institution).bilateral:
        if engine == "lockstep":
            raise ValueError(f"engine 'lockstep' plays bilateral bargaining only; institution "
                             f"{institution!r} runs on the compiled engine")
        return CompiledEngine, missing
    if engine == "lockstep":
        return LockstepEngine, missing
    if engine == "compiled" and missing:
        raise ValueError(f"engine 'compiled' needs a compiled decision for every strategy; "
                         f"{', '.join(sorted(set(missing)))} has none")
    if engine not in ("auto", "compiled"):
        raise ValueError(f"engine must be one of auto, compiled, lockstep (got {engine!r})")
    return (LockstepEngine if missing else CompiledEngine), missing


class LockstepNotice(Notice):
    """A market runs on the lockstep path because some strategy has no compiled decision."""


def lockstep_words(missing: Sequence[str]) -> str:
    """The notice's sentence: ``genius and negmas have no compiled decision``."""
    names = sorted(set(missing))
    said = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    verb = "has" if len(names) == 1 else "have"
    return (f"the market runs on the lockstep path (each strategy's Python act, slower): "
            f"{said} {verb} no compiled decision")


def say_lockstep(missing: Sequence[str]) -> None:
    """Say (as a :class:`LockstepNotice`) that the market runs on the lockstep path; the
    command line prints it as one plain line, once."""
    warnings.warn(lockstep_words(missing), LockstepNotice, stacklevel=3)


def lockstep_strategies(mixes: Sequence[Mapping[str, float] | None]) -> list[str]:
    """The strategies of these mixes that have no compiled decision (they put a market on
    the lockstep path)."""
    from strategies import specs

    classes = {specs.parse(name).cls for mix in mixes for name in (mix or {})}
    return sorted({cls.name or cls.__name__ for cls in classes if not compiled.has_form(cls)})
