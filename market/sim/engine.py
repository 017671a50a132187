"""The market step in one compiled call: pair, negotiate, settle, pay, learn.

A market step is thousands of tiny decisions; numpy's per-call overhead on
each move of each strategy group was nearly all of its cost. When every
strategy of the market has a compiled decision (:mod:`strategies.compiled`:
every built-in one), :class:`CompiledEngine` runs the whole step in one numba
call: :func:`~market.sim.exchange.pair` and
:func:`~market.sim.exchange.openers`, the alternating-offers protocol of
:mod:`market.game.protocol` move by move (each strategy group of a side
decides for its rows, sides and groups in the lockstep order),
:func:`~market.sim.exchange.settle_deals`, :func:`~market.sim.exchange.pay`
and the learners' updates, all on the model's own arrays.

A market whose strategies draw nothing (:data:`strategies.compiled.DETERMINISTIC`)
plays each negotiation to its end before the next: the same moves, since no
draw order is at stake, with each negotiation's state in registers instead
of a pass over all of them at every move.

Otherwise (a ``negmas:`` or ``genius:`` strategy, a user's class)
:class:`LockstepEngine` runs the step as before: the same compiled pairing,
settling and paying, with the negotiation in :func:`~market.game.protocol.negotiate`
(each strategy's Python ``act``) and learning through each strategy's
``learn``. The model says which once, through ``MarketModel.engine``.

Both give the same tables from the same seed, bit for bit: the compiled
decisions make the draws of ``act`` in the same order from the same numpy
``Generator`` (numba shares its bit generator), groups are visited in the
same order, and the arithmetic is the same IEEE operations (the
transcendental ones through :mod:`market.game.jit`). The tests run both
paths on every built-in strategy and on random mixes and compare every
table.

Cache: ``njit(cache=True)`` keeps the machine code beside each module. numba
checks only the timestamp of the file of the function it loads, not of the
functions compiled into it, so an edited strategy would play its old
compiled rule inside a cached engine. :func:`ensure_compiled` therefore
keeps a digest of every source the engine is built from and, when it
changes, removes those modules' cached machine code (only numba's ``.nbi``
and ``.nbc`` files of those modules) before the first call.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from market.errors import CompileError
from market.game import jit
from market.game import protocol as lockstep
from market.game.jit import njit
from market.game.protocol import IllegalAction, Side
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER, Protocol
from market.sim import exchange
from market.sim.agents import TraderArrays
from strategies import compiled, spe
from strategies.base import (
    LAYOUT_COLUMNS,
    PARAMS,
    PLAYED,
    TABLE,
    TABLES,
    WAIT,
    KernelState,
    Strategy,
)

# Every population's arrays live in two flat stores (floats, integers), one slice each, and a
# layout table says where (strategies.base): numba then takes the whole market as a handful
# of arrays, and compiled decisions index the stores without making array views. A
# population's own attributes become views of its slices (``Strategy.adopt``), so what the
# engine learns the strategy knows.


def stores(states: Sequence[KernelState]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                     list[KernelState]]:
    """The flat stores, their layout table, and each population's views into them."""
    layout = np.zeros((len(states), LAYOUT_COLUMNS), dtype=np.int64)
    floats: list[np.ndarray] = []
    ints: list[np.ndarray] = []
    sizes = {"f": 0, "i": 0}

    def place(g: int, at: int, arr: np.ndarray, kind: str) -> None:
        layout[g, at] = sizes[kind]
        layout[g, at + 1:at + 1 + arr.ndim] = arr.shape
        (floats if kind == "f" else ints).append(arr.reshape(-1))
        sizes[kind] += arr.size

    for g, st in enumerate(states):
        place(g, PARAMS, np.asarray(st.params, dtype=np.float64), "f")
        place(g, TABLES, np.asarray(st.tables, dtype=np.float64), "f")
        place(g, WAIT, np.asarray(st.wait, dtype=np.float64), "f")
        place(g, TABLE, np.asarray(st.table, dtype=np.int64), "i")
        place(g, PLAYED, np.asarray(st.played, dtype=np.int64), "i")
    fstore = np.concatenate(floats) if floats else np.zeros(0)
    istore = np.concatenate(ints) if ints else np.zeros(0, dtype=np.int64)

    def view(store: np.ndarray, g: int, at: int, ndim: int) -> np.ndarray:
        o = layout[g, at]
        shape = tuple(int(x) for x in layout[g, at + 1:at + 1 + ndim])
        return store[o:o + int(np.prod(shape))].reshape(shape)

    views = [KernelState(params=view(fstore, g, PARAMS, 2), tables=view(fstore, g, TABLES, 4),
                         wait=view(fstore, g, WAIT, 2), table=view(istore, g, TABLE, 2),
                         played=view(istore, g, PLAYED, 1), config=st.config)
             for g, st in enumerate(states)]
    return fstore, istore, layout, views


@njit(cache=True)
def _negotiate(P, T, first, s_group, s_member, s_lo, s_hi, b_group, b_member, b_lo, b_hi,  # noqa: ANN001, ANN202, PLR0913
               time_left, kinds, n_groups_s, fstore, istore, layout, config, rng):
    """The protocol's lockstep loop (:func:`market.game.protocol.negotiate`), compiled.

    Groups ``0 .. n_groups_s - 1`` of the layout are the Sellers'
    strategies, the rest the Buyers'. At each move the negotiations still
    running (kept in increasing order) are sorted by (side, group) in one
    counting pass, so each group decides for its rows in the lockstep
    order: Sellers' groups first, each group's rows ascending. Returns the
    record's arrays and the move of an illegal action (-1 if none).
    """
    n = first.size
    M = 2 * T
    actions = np.full((n, M), -1, dtype=np.int32)
    level = np.zeros(n, dtype=np.int64)
    n_moves = np.zeros(n, dtype=np.int64)
    deterministic = True
    for k in kinds:
        deterministic = deterministic and k in compiled.DETERMINISTIC
    if deterministic:  # nothing draws: each negotiation to its end, in the cache
        bad = _depth_first(P, T, first, s_group, s_member, s_lo, s_hi, b_group, b_member, b_lo,
                           b_hi, kinds, n_groups_s, fstore, istore, layout, actions, level,
                           n_moves)
        return actions, level, n_moves, bad
    last = np.zeros((2, n), dtype=np.int64)
    prev = np.zeros((2, n), dtype=np.int64)
    chosen = np.zeros(n, dtype=np.int64)
    running = np.arange(n)
    n_running = n
    n_groups = kinds.size
    count = np.zeros(n_groups + 1, dtype=np.int64)
    key = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    for move in range(M):
        if n_running == 0:
            break
        lo_a, hi_a = (0, P) if move == 0 else ((P, P + 2) if (move - 1) // 2 == T - 1
                                               else (0, P + 2))
        count[:] = 0
        for j in range(n_running):
            i = running[j]
            if (first[i] if move % 2 == 0 else 1 - first[i]) == SELLER:
                key[j] = s_group[i]
            else:
                key[j] = n_groups_s + b_group[i]
            count[key[j] + 1] += 1
        for g in range(n_groups):
            count[g + 1] += count[g]
        for j in range(n_running):  # stable: each group's rows stay ascending
            order[count[key[j]]] = running[j]
            count[key[j]] += 1
        start = 0
        for g in range(n_groups):
            stop = count[g]
            if stop == start:
                continue
            rg = order[start:stop]
            start = stop
            s = SELLER if g < n_groups_s else BUYER
            if s == SELLER:
                member, lo, hi = s_member, s_lo, s_hi
            else:
                member, lo, hi = b_member, b_lo, b_hi
            compiled.decide(kinds[g], s, move, P, T, rg, last, prev, first, lo, hi, member,
                            time_left, fstore, istore, layout, g, config, rng, chosen)
            for r in rg:
                if chosen[r] < lo_a or chosen[r] >= hi_a:
                    return actions, level, n_moves, move
        still = 0
        for j in range(n_running):  # play the move (protocol.Lockstep.play)
            i = running[j]
            a = chosen[i]
            actions[i, move] = a
            n_moves[i] = move + 1
            mv = first[i] if move % 2 == 0 else 1 - first[i]
            if a < P:
                prev[mv, i] = last[mv, i]
                last[mv, i] = a + 1
                running[still] = i
                still += 1
            elif a == P:
                level[i] = last[1 - mv, i]
        n_running = still
    return actions, level, n_moves, -1


@njit(cache=True)
def _depth_first(P, T, first, s_group, s_member, s_lo, s_hi, b_group, b_member, b_lo, b_hi,  # noqa: ANN001, ANN202, PLR0913
                 kinds, n_groups_s, fstore, istore, layout, actions, level, n_moves):
    """:func:`_negotiate` for markets whose strategies draw nothing: the same moves, one
    negotiation at a time (its state stays in registers instead of a pass over every
    negotiation at each move). Only scalars go into the per-move calls: an array passed
    costs two atomic reference counts. Returns the move of an illegal action, -1 if none."""
    M = 2 * T
    p_at, p_cols = layout[:, PARAMS].copy(), layout[:, PARAMS + 2].copy()
    t_at, t_cols = layout[:, TABLE].copy(), layout[:, TABLE + 2].copy()
    for i in range(first.size):
        last_s = last_b = prev_s = prev_b = 0
        for move in range(M):
            lo_a, hi_a = (0, P) if move == 0 else ((P, P + 2) if (move - 1) // 2 == T - 1
                                                   else (0, P + 2))
            s = first[i] if move % 2 == 0 else 1 - first[i]
            if s == SELLER:
                g, m, lo, hi = s_group[i], s_member[i], s_lo[i], s_hi[i]
                offer, own, prv = last_b, last_s, prev_b
            else:
                g, m, lo, hi = n_groups_s + b_group[i], b_member[i], b_lo[i], b_hi[i]
                offer, own, prv = last_s, last_b, prev_s
            if kinds[g] == compiled.SPE:  # its action table by role and row (base.table_at)
                role = 0 if first[i] == s else 1
                a = istore[t_at[g] + role * t_cols[g] + spe.row1(move, P, offer)]
            else:
                param = fstore[p_at[g] + m * p_cols[g]] if p_cols[g] > 0 else 0.0
                a = compiled.rule1(kinds[g], s, move, P, T, offer, own, prv, lo, hi, param)
            if a < lo_a or a >= hi_a:
                return move
            actions[i, move] = a
            n_moves[i] = move + 1
            if a < P:
                if s == SELLER:
                    prev_s, last_s = last_s, a + 1
                else:
                    prev_b, last_b = last_b, a + 1
                continue
            if a == P:
                level[i] = offer
            break
    return -1


@njit(cache=True)
def _step(P, T, open_mode, time_left_now, grid_lo, grid_step, span, disc_s, disc_b,  # noqa: ANN001, ANN202, PLR0913
          s_res, s_strategy, s_member, s_team, s_cash, s_earn, s_trades, s_traded, s_lo, s_hi,
          b_res, b_strategy, b_member, b_team, b_cash, b_earn, b_trades, b_traded, b_lo, b_hi,
          team_size, kinds, n_groups_s, fstore, istore, layout, config, rng):
    """One market step on the model's arrays (see the module docstring)."""
    ps, pb = exchange.pair(s_traded, b_traded, rng)
    n = ps.size
    first = exchange.openers(n, open_mode, rng)
    time_left = np.full(n, time_left_now, dtype=np.int64)
    actions, level, n_moves, bad = _negotiate(
        P, T, first, s_strategy[ps], s_member[ps], s_lo[ps], s_hi[ps], b_strategy[pb],
        b_member[pb], b_lo[pb], b_hi[pb], time_left, kinds, n_groups_s, fstore, istore, layout,
        config, rng)
    if bad >= 0:
        return _packed(ps, pb, first, level, n_moves, np.zeros(n), np.zeros(0), np.zeros(0)), \
            actions, bad
    prices, deal, gain_s, gain_b = exchange.settle_deals(
        ps, pb, level, n_moves, grid_lo, grid_step, disc_s, disc_b, s_res, b_res, s_cash,
        b_cash, s_earn, b_earn, s_trades, b_trades, s_traded, b_traded)
    reward = exchange.pay(deal, gain_s, gain_b, span, s_team[ps], b_team[pb], team_size)
    n_groups = kinds.size
    for s in range(2):
        idx = ps if s == SELLER else pb
        strategy = s_strategy if s == SELLER else b_strategy
        member = s_member if s == SELLER else b_member
        g0, g1 = (0, n_groups_s) if s == SELLER else (n_groups_s, n_groups)
        for g in range(g0, g1):
            if config[g, 0] == 0:
                continue
            k = 0
            for i in range(n):
                k += strategy[idx[i]] == g - g0
            if k == 0:
                continue
            rows = np.empty(k, dtype=np.int64)
            j = 0
            for i in range(n):
                if strategy[idx[i]] == g - g0:
                    rows[j] = i
                    j += 1
            compiled.learn(kinds[g], s, P, T, rows, actions, first, n_moves, level,
                           member[idx[rows]], reward[s, rows], time_left[rows], fstore,
                           istore, layout, g, config)
    return _packed(ps, pb, first, level, n_moves, prices, gain_s, gain_b), actions, -1


@njit(cache=True, inline="always")
def _packed(ps, pb, first, level, n_moves, prices, gain_s, gain_b):  # noqa: ANN001, ANN202
    """One step's results as one (8, n) float array, as few as numba must hand back (each
    returned array costs a call back into Python): rows ps, pb, first, level, n_moves,
    prices, and the deals' gains (Seller, Buyer) at the front of their rows."""
    n = ps.size
    out = np.zeros((8, n))
    for i in range(n):
        out[0, i], out[1, i], out[2, i] = ps[i], pb[i], first[i]
        out[3, i], out[4, i], out[5, i] = level[i], n_moves[i], prices[i]
    for j in range(gain_s.size):
        out[6, j], out[7, j] = gain_s[j], gain_b[j]
    return out


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


@dataclass
class Market:
    """What an engine steps: both sides' arrays, acceptable levels, strategies, the rules."""

    protocol: Protocol
    books: tuple[TraderArrays, TraderArrays]
    levels: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    strategies: tuple[Sequence[Strategy], Sequence[Strategy]]
    open_mode: int
    grid_lo: float
    grid_step: float
    span: float
    team_size: np.ndarray  # empty: no common wallet


class LockstepEngine:
    """The step with each strategy's Python ``act`` and ``learn`` (any strategy at all)."""

    name = "lockstep"

    def step(self, m: Market, time_left: int, rng: np.random.Generator) -> StepResult:
        S, B = m.books
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
        pr = m.protocol
        prices, deal, gain_s, gain_b = exchange.settle_deals(
            ps, pb, record.level, record.n_moves, m.grid_lo, m.grid_step, pr.seller_discount,
            pr.buyer_discount, S.reservation, B.reservation, S.cash, B.cash, S.earnings,
            B.earnings, S.trades, B.trades, S.traded, B.traded)
        reward = exchange.pay(deal, gain_s, gain_b, m.span, S.team[ps], B.team[pb],
                                  m.team_size)
        exchange.learn(m.strategies, m.books, ps, pb, record, reward, tl)
        return StepResult(ps, pb, record, prices, deal, gain_s, gain_b)


class CompiledEngine:
    """The step in one compiled call; for markets whose every strategy has a compiled form."""

    name = "compiled"

    def __init__(self, m: Market) -> None:
        ensure_compiled()
        self._market = m
        states: list[KernelState] = []
        kinds = []
        for side in (SELLER, BUYER):
            for strat in m.strategies[side]:
                kind = compiled.kind_of(strat)
                if kind is None:
                    raise ValueError(f"strategy {strat.name!r} has no compiled decision")
                kinds.append(kind)
                states.append(strat.kernel_state())
        self.kinds = np.array(kinds, dtype=np.int64)
        self.n_groups_s = len(m.strategies[SELLER])
        self.fstore, self.istore, self.layout, views = stores(states)
        for strat, view in zip((*m.strategies[SELLER], *m.strategies[BUYER]), views,
                               strict=True):
            strat.adopt(view)
        self.config = np.stack([st.config for st in states]) if states else np.zeros((0, 8),
                                                                                      np.int64)

    def __getstate__(self) -> dict[str, Market]:
        """Pickled as its market; the stores are rebuilt (and adopted again) on loading."""
        return {"market": self._market}

    def __setstate__(self, state: dict[str, Market]) -> None:
        self.__init__(state["market"])  # type: ignore[misc]

    def step(self, m: Market, time_left: int, rng: np.random.Generator) -> StepResult:
        S, B = m.books
        (s_lo, b_lo), (s_hi, b_hi) = m.levels
        P, T = m.protocol.prices, m.protocol.rounds
        packed, actions, bad = _step(
            P, T, m.open_mode, time_left, m.grid_lo, m.grid_step, m.span,
            float(m.protocol.seller_discount), float(m.protocol.buyer_discount),
            S.reservation, S.strategy, S.member, S.team, S.cash, S.earnings, S.trades, S.traded,
            s_lo, s_hi,
            B.reservation, B.strategy, B.member, B.team, B.cash, B.earnings, B.trades, B.traded,
            b_lo, b_hi,
            m.team_size, self.kinds, self.n_groups_s, self.fstore, self.istore, self.layout,
            self.config, rng)
        if bad >= 0:
            raise IllegalAction(f"a compiled strategy played an illegal action at move {bad}")
        ints = packed[:5].astype(np.int64)  # exact: indices and levels are far below 2**53
        ps, pb = ints[0], ints[1]
        if ps.size == 0:
            return StepResult(ps, pb)
        level = ints[3]
        deal = level > 0
        k = int(deal.sum())
        record = BatchRecord(m.protocol, actions, ints[2].astype(np.int8), level, ints[4])
        return StepResult(ps, pb, record, packed[5], deal, packed[6, :k], packed[7, :k])


def negotiate(protocol: Protocol, seller: Side, buyer: Side, first: np.ndarray | int,
              rng: np.random.Generator, time_left: np.ndarray | None = None) -> BatchRecord:
    """:func:`market.game.protocol.negotiate`, compiled when every strategy has a compiled form.

    The same record from the same generator either way (nothing learns
    here: learners decide on copies of their tables). For callers that run
    negotiations outside a market: the tournament, the report.
    """
    strategies = (*seller.strategies, *buyer.strategies)
    kinds = [compiled.kind_of(s) for s in strategies]
    n = len(seller.group)
    if None in kinds or jit.numba is None or n != len(buyer.group):
        return lockstep.negotiate(protocol, seller, buyer, first, rng, time_left)
    ensure_compiled()
    states = [s.kernel_state() for s in strategies]
    fstore, istore, layout, _ = stores(states)
    config = np.stack([st.config for st in states])
    opens = np.ascontiguousarray(np.broadcast_to(np.asarray(first, dtype=np.int64), (n,)))
    tl = (np.full(n, -1, dtype=np.int64) if time_left is None
          else np.ascontiguousarray(time_left, dtype=np.int64))

    def ints(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    actions, level, n_moves, bad = _negotiate(
        protocol.prices, protocol.rounds, opens, ints(seller.group), ints(seller.member),
        ints(seller.lo), ints(seller.hi), ints(buyer.group), ints(buyer.member), ints(buyer.lo),
        ints(buyer.hi), tl, np.array(kinds, dtype=np.int64), len(seller.strategies), fstore,
        istore, layout, config, rng)
    if bad >= 0:
        raise IllegalAction(f"a compiled strategy played an illegal action at move {bad}")
    return BatchRecord(protocol, actions, opens.astype(np.int8), level, n_moves)


def choose(strategies: tuple[Sequence[Strategy], Sequence[Strategy]], engine: str = "auto"
           ) -> tuple[type[CompiledEngine] | type[LockstepEngine], list[str]]:
    """The engine class for these strategies, and the names of those without a compiled form.

    ``engine``: ``auto`` (compiled when every strategy has a compiled
    decision), ``compiled`` (refused, naming them, when some have none) or
    ``lockstep``.
    """
    missing = [getattr(s, "name", type(s).__name__) or type(s).__name__
               for side in strategies for s in side if compiled.kind_of(s) is None]
    if engine == "lockstep":
        return LockstepEngine, missing
    if engine == "compiled" and missing:
        raise ValueError(f"engine 'compiled' needs a compiled decision for every strategy; "
                         f"{', '.join(sorted(set(missing)))} has none")
    if engine not in ("auto", "compiled"):
        raise ValueError(f"engine must be one of auto, compiled, lockstep (got {engine!r})")
    return (LockstepEngine if missing else CompiledEngine), missing


# --- compiling once ----------------------------------------------------------------------------
COMPILING = "compiling the market engine (first run only, about 20 seconds)"
_ready = False
_lock = threading.Lock()


def ensure_compiled(on_compile: Callable[[], None] | None = None) -> None:
    """Load the engine from numba's cache, or compile it (seconds, once per machine).

    ``on_compile`` is called once, before compiling, only when the cache does
    not hold the engine (by default it prints :data:`COMPILING` on stderr).
    Raises :class:`~market.errors.CompileError` with one
    line when numba cannot compile here.
    """
    global _ready
    if _ready:
        return
    from market.game.kernel import announce_compiles

    if jit.numba is None:
        raise CompileError(f"numba cannot be imported ({_first_line(jit.IMPORT_ERROR)}); "
                           "the compiled market engine needs it: pip install 'numba>=0.60'")
    with _lock:
        if _ready:
            return
        _drop_stale_cache()
        try:
            with announce_compiles(on_compile or _say_compiling):
                _smoke()
        except Exception as exc:
            raise CompileError(f"numba cannot compile the market engine on this machine "
                               f"({type(exc).__name__}: {_first_line(exc)})") from exc
        _ready = True


#: the modules whose compiled functions end up inside the engine
SOURCES = ("market.game.jit", "market.game.qtable", "market.game.rules", "market.sim.exchange",
           "market.sim.engine", "market.interop.fastgame", "strategies.base",
           "strategies.compiled", "strategies.rule_based", "strategies._ranges",
           "strategies.averaging", "strategies.time_dependent", "strategies.hardliner",
           "strategies.tit_for_tat", "strategies.zero_intelligence", "strategies.spe",
           "strategies.qlearning")


def _drop_stale_cache() -> None:
    """Remove the engine modules' cached machine code when any of their sources changed."""

    files = [Path(importlib.import_module(name).__file__ or "") for name in SOURCES]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    cache = Path(jit.numba.config.CACHE_DIR) if jit.numba.config.CACHE_DIR else None
    stamp = (cache or Path(__file__).parent / "__pycache__") / "engine.sources"
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    for f in files:
        where = cache if cache is not None else f.parent / "__pycache__"
        if where is not None and where.is_dir():
            for old in where.glob(f"{f.stem}.*.nb[ic]"):
                old.unlink(missing_ok=True)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: numba falls back on its own checks
        pass


def _say_compiling() -> None:

    print(COMPILING, file=sys.stderr, flush=True)


def _smoke() -> None:
    """One step of a tiny market: compiles the engine or loads it from the cache."""
    n = 2
    f, i = np.zeros(n), np.zeros(n, dtype=np.int64)
    fstore, istore, layout, _ = stores([KernelState(), KernelState()])  # one strategy a side
    _step(2, 1, exchange.OPEN_RANDOM, -1, 0.0, 1.0, 1.0, 1.0, 1.0,
          f.copy(), i.copy(), i.copy(), i.copy(), f.copy(), f.copy(), i.copy(),
          np.zeros(n, np.bool_), np.ones(n, np.int64), np.full(n, 2, np.int64),
          f.copy(), i.copy(), i.copy(), i.copy(), f.copy(), f.copy(), i.copy(),
          np.zeros(n, np.bool_), np.ones(n, np.int64), np.full(n, 2, np.int64),
          np.zeros(0, np.int64), np.zeros(2, np.int64), 1, fstore, istore, layout,
          np.zeros((2, 8), np.int64), np.random.default_rng(0))
    _negotiate(2, 1, i.copy(), i.copy(), i.copy(), np.ones(n, np.int64), np.full(n, 2, np.int64),
               i.copy(), i.copy(), np.ones(n, np.int64), np.full(n, 2, np.int64),
               np.full(n, -1, np.int64), np.zeros(2, np.int64), 1, fstore, istore, layout,
               np.zeros((2, 8), np.int64), np.random.default_rng(0))


def _first_line(exc: BaseException | None) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class LockstepNotice(UserWarning):
    """A market runs on the lockstep path because some strategy has no compiled decision."""


def say_lockstep(missing: Sequence[str]) -> None:
    """Say once (per place it is asked from) that the market runs on the lockstep path."""

    names = ", ".join(sorted(set(missing)))
    warnings.warn(f"the market runs on the lockstep path (each strategy's Python act, slower): "
                  f"{names} has no compiled decision", LockstepNotice, stacklevel=3)
