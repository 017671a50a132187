"""The market's parameters: what they are, and the one check every caller runs.

:class:`Params` declares every keyword of :class:`~market.sim.model.MarketModel`
(name, type, default, meaning). :func:`check` turns whatever a caller has
(a full set, or only the values it changes) into checked, normalised
``Params``: the model runs it on its own arguments, and the market command,
the batch runner (every grid point, before any run) and the browser view
run the same function, so a value is refused with the same words and the
same caps wherever it comes from. Messages name the parameter (or the
caller's name for it, e.g. a command-line flag) and the allowed range.

The checks run in order: each value on its own (:func:`_check_values`),
then the size caps of :data:`LIMITS` (the numbers live in
:mod:`market.limits`; a new cap is one more function in that list), with
the strategy mixes checked and normalised in between; then the files the
mixes name (a saved Q-table is read and checked against the market's P and
T, so a damaged or mismatched file is refused before any run, naming it);
last, the memory the run would need (:func:`memory_estimate`: traders,
Q-tables, one step's negotiations and, when the caller knows the number of
steps, what the run records) against the machine's.

:func:`model_parameters` tells tools that sweep or draw parameters (the
batch runner, the plots) each keyword's scalar type and default.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from market.errors import UsageError
from market.game.protocol import negotiation_bytes
from market.game.rules import Protocol
from market.limits import (
    MONEY_MAX,
    PRICES_MAX,
    ROUNDS_MAX,
    STEPS_MAX,
    TRADERS_MAX,
    check_memory,
)
from strategies import specs
from strategies.base import CLOCK_PARTS, MarketSetting

#: a reservation-price distribution: a name, or ``f(rng, n, lo, hi) -> array``
Distribution = str | Callable[[np.random.Generator, int, float, float], np.ndarray]
DISTRIBUTIONS = ("uniform", "normal", "triangular")
FIRST_MOVERS = ("random", "seller", "buyer")
AGENT_DATA = ("period", "step", "none")
LEARNER_PARAMS = ("fixed", "drawn")

#: the mix of a side whose mix is not given
DEFAULT_MIX = {"averaging": 1.0}


@dataclass(frozen=True)
class Params:
    """Every parameter of a market; :func:`check` returns them checked and normalised.

    n_buyers, n_sellers:
        traders on each side (at least 1 each).
    buyer_mix, seller_mix:
        strategy name -> share of the side (shares sum to 1), e.g.
        ``{"averaging": 0.5, "qlearning": 0.5}``; counts are the shares
        rounded by largest remainder, and who gets which strategy is drawn.
        A name may be ``"qlearning:FILE.npz"`` to start learners from a saved
        table. Default (None): everybody plays ``averaging``.
    prices, rounds:
        the protocol's P levels over the traders' price range and T rounds.
    discount, seller_discount, buyer_discount:
        time costs inside a negotiation: each side's factor per offer in
        (0, 1] (``discount`` for both; a side's own overrides it; default 1,
        time is free). A deal on the k-th offer earns each side ``d ** k`` of
        its surplus (:func:`~market.sim.exchange.settle_deals`), which its
        learners are paid and the market's efficiency counts.
    period:
        K, steps per trading period; each trader trades at most one unit per period.
    redraw:
        draw new values and costs at every period (else they are kept).
    value_range, cost_range, value_dist, cost_dist:
        where Buyers' values and Sellers' costs come from: ``"uniform"``
        (default), ``"normal"`` (centred, sd a sixth of the range, clipped),
        ``"triangular"`` (mode at the centre), or a callable
        ``f(rng, n, lo, hi) -> array``.
    first:
        who moves first in each pair: ``"random"`` (per pair), ``"seller"``, ``"buyer"``.
    teams:
        number of teams per side (traders assigned at random); None: every
        trader is a team of one.
    common_wallet:
        pool earnings per team: ``agent.wallet`` is the team's, and a
        learner's reward is its team's surplus of the step per member.
    clock:
        the market clock: learners observe the steps left in the period and
        value a failed negotiation at what waiting is worth (nothing at the
        last step); see :class:`~strategies.qlearning.MarketQLearning`.
    clock_parts:
        which of the clock's two changes a learner gets (with ``clock``):
        ``"both"`` (default); ``"state"``, the steps left in its state, a
        failed negotiation still worth 0; ``"wait"``, a failed negotiation
        worth what waiting is, the state without the steps left. The two alone
        separate what each does.
    clock_buckets:
        time-left slots of a clocked learner's table (default ``min(period, 4)``;
        at most one per step of a period, so at most :data:`~market.limits.STEPS_MAX`).
    learner_params:
        ``"fixed"`` (the defaults of :func:`~strategies.qlearning.default_learner_params`)
        or ``"drawn"`` (per agent, :func:`~strategies.qlearning.drawn_learner_params`).
    rational_learners:
        learners only consider individually rational actions (default True).
    strategy_params:
        extra keyword arguments per strategy name, passed to its constructor.
    agent_data:
        when the DataCollector records agent variables: ``"period"``, ``"step"``, ``"none"``.
    """

    n_buyers: int = 50
    n_sellers: int = 50
    buyer_mix: Mapping[str, float] | None = None
    seller_mix: Mapping[str, float] | None = None
    prices: int = 5
    rounds: int = 5
    discount: float | None = None
    seller_discount: float | None = None
    buyer_discount: float | None = None
    period: int = 10
    redraw: bool = False
    value_range: tuple[float, float] = (0.0, 100.0)
    cost_range: tuple[float, float] = (0.0, 100.0)
    value_dist: Distribution = "uniform"
    cost_dist: Distribution = "uniform"
    first: str = "random"
    teams: int | None = None
    common_wallet: bool = False
    clock: bool = False
    clock_parts: str = "both"
    clock_buckets: int | None = None
    learner_params: str = "fixed"
    rational_learners: bool = True
    strategy_params: Mapping[str, Mapping[str, Any]] | None = None
    agent_data: str = "period"

    def kwargs(self) -> dict[str, Any]:
        """The parameters as keyword arguments of :class:`~market.sim.model.MarketModel`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def protocol(self) -> Protocol:
        return Protocol(self.prices, self.rounds, *self.discounts)

    @property
    def discounts(self) -> tuple[float, float]:
        """(Seller, Buyer) factors per offer: a side's own, else ``discount``, else 1."""
        both = 1.0 if self.discount is None else float(self.discount)
        return (both if self.seller_discount is None else float(self.seller_discount),
                both if self.buyer_discount is None else float(self.buyer_discount))


#: the parameter names, in declaration order
NAMES = tuple(f.name for f in fields(Params))
#: what names a parameter in a message: the parameter itself, or a caller's word for it
Namer = Callable[[str], str]


def check(params: Mapping[str, Any], names: Mapping[str, str] | None = None,
          steps: int | None = None) -> Params:
    """Check ``params`` (missing ones take their defaults) and return them normalised.

    ``ValueError`` (a :class:`~market.errors.UsageError` for a size cap or a
    file) naming the first bad parameter and its allowed range. ``names``
    maps a parameter to what the caller calls it in messages (the market
    command's flags). ``steps``: the length of the run, when the caller
    knows it, so that what the run records counts in the memory estimate.
    Mixes come back with their shares normalised to sum to 1 and zero shares
    dropped; ranges as floats; ``clock_buckets`` resolved.
    """
    unknown = [k for k in params if k not in NAMES]
    if unknown:
        raise ValueError(f"unknown market parameter {unknown[0]!r} "
                         f"(choose from: {', '.join(NAMES)})")
    mapping = dict(names or {})

    def say(name: str) -> str:
        return mapping.get(name, name)

    a = {**Params().kwargs(), **params}
    _check_values(a, say)
    p = Params(
        n_buyers=int(a["n_buyers"]),
        n_sellers=int(a["n_sellers"]),
        buyer_mix=check_mix(say("buyer_mix"), _mix(a["buyer_mix"])),
        seller_mix=check_mix(say("seller_mix"), _mix(a["seller_mix"])),
        prices=int(a["prices"]),
        rounds=int(a["rounds"]),
        discount=None if a["discount"] is None else float(a["discount"]),
        seller_discount=None if a["seller_discount"] is None else float(a["seller_discount"]),
        buyer_discount=None if a["buyer_discount"] is None else float(a["buyer_discount"]),
        period=int(a["period"]),
        redraw=bool(a["redraw"]),
        value_range=(float(a["value_range"][0]), float(a["value_range"][1])),
        cost_range=(float(a["cost_range"][0]), float(a["cost_range"][1])),
        value_dist=a["value_dist"],
        cost_dist=a["cost_dist"],
        first=a["first"],
        teams=None if a["teams"] is None else int(a["teams"]),
        common_wallet=bool(a["common_wallet"]),
        clock=bool(a["clock"]),
        clock_parts=a["clock_parts"],
        clock_buckets=int(min(int(a["period"]), 4) if a["clock_buckets"] is None
                          else a["clock_buckets"]),
        learner_params=a["learner_params"],
        rational_learners=bool(a["rational_learners"]),
        strategy_params={k: dict(v) for k, v in (a["strategy_params"] or {}).items()},
        agent_data=a["agent_data"],
    )
    for limit in LIMITS:
        limit(p, say)
    _check_spec_files(p, say)
    _check_memory(p, say, steps)
    return p


def _mix(mix: Mapping[str, float] | None) -> dict[str, float]:
    return dict(DEFAULT_MIX if mix is None else mix)


# --- each value on its own ------------------------------------------------------------------
def _check_values(a: dict[str, Any], say: Namer) -> None:
    """Types, choices and lower bounds, one parameter at a time."""
    _check_count(say("n_buyers"), a["n_buyers"])
    _check_count(say("n_sellers"), a["n_sellers"])
    _check_int(say("period"), a["period"], 1)
    _check_choice(say("first"), a["first"], FIRST_MOVERS)
    _check_choice(say("agent_data"), a["agent_data"], AGENT_DATA)
    _check_choice(say("learner_params"), a["learner_params"], LEARNER_PARAMS)
    _check_choice(say("clock_parts"), a["clock_parts"], CLOCK_PARTS)
    for name in ("value_range", "cost_range"):
        _check_range(say(name), a[name])
    for name in ("value_dist", "cost_dist"):
        if not callable(a[name]):
            _check_choice(say(name), a[name], DISTRIBUTIONS)
    if a["teams"] is not None:
        _check_int(say("teams"), a["teams"], 1)
    if a["clock_buckets"] is not None:
        _check_int(say("clock_buckets"), a["clock_buckets"], 1)
    for name in ("discount", "seller_discount", "buyer_discount"):
        if a[name] is not None:
            _check_discount(say(name), a[name])
    Protocol(int(a["prices"]), int(a["rounds"]))  # the protocol's own bounds and words


def _check_discount(name: str, d: Any) -> None:
    """A factor per offer in (0, 1]: 0 would make every deal after the first offer worthless."""
    ok = isinstance(d, int | float | np.integer | np.floating) and not isinstance(d, bool)
    if not ok or not (0.0 < float(d) <= 1.0):
        raise ValueError(f"{name} must be a number in (0, 1] (got {d!r})")


def _check_range(name: str, value: Any) -> None:
    """Two finite numbers ``lo < hi``, each within :data:`~market.limits.MONEY_MAX` in size,
    so that the draws, the price grid and every sum of prices of a run stay finite."""
    try:
        lo, hi = (float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be two numbers lo < hi (got {value!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be two finite numbers lo < hi (got {value!r})")
    if max(abs(lo), abs(hi)) > MONEY_MAX:
        raise ValueError(f"{name} must lie within [-{MONEY_MAX:g}, {MONEY_MAX:g}] "
                         f"(got {lo:g}, {hi:g})")


def _check_count(name: str, n: Any) -> None:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{name} must be an integer >= 1 (got {n!r}); a side cannot be empty")


def _check_int(name: str, n: Any, lo: int) -> None:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < lo:
        raise ValueError(f"{name} must be an integer >= {lo} (got {n!r})")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)} (got {value!r})")


# --- mixes --------------------------------------------------------------------------------------
def check_mix(name: str, mix: dict[str, float]) -> dict[str, float]:
    """Strategy shares: known names, non-negative, summing to 1; zero shares dropped."""
    if not mix:
        raise ValueError(f"{name} must name at least one strategy")
    out = {}
    for spec, share in mix.items():
        specs.parse(spec, name)
        try:
            share = float(share)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: share of {spec!r} must be a number (got {share!r})"
            ) from None
        if not math.isfinite(share) or share < 0:
            raise ValueError(f"{name}: share of {spec!r} must be >= 0 (got {share})")
        if share > 0:
            out[str(spec)] = share
    total = sum(out.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"{name}: shares must sum to 1 (got {total:g})")
    # within the tolerance, normalise: counts by largest remainder then add up to n exactly
    return {k: v / total for k, v in out.items()}


def parse_mix(text: str, name: str) -> dict[str, float]:
    """``"a=0.5,b=0.5"`` (a bare ``"a"`` is ``a=1``) -> shares as typed, for :func:`check`."""
    mix: dict[str, float] = {}
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        spec, eq, share = part.partition("=")
        spec = spec.strip()
        if not eq:
            share = "1"
        try:
            value = float(share)
        except ValueError:
            raise UsageError(
                f"{name}: share of {spec!r} must be a number (got {share!r})"
            ) from None
        if spec in mix:
            raise UsageError(f"{name}: strategy {spec!r} is named twice")
        mix[spec] = value
    return mix


def parse_range(text: str, name: str) -> tuple[float, float]:
    """``"LO,HI"`` -> ``(lo, hi)``, two finite numbers with ``lo < hi``."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise UsageError(f"{name} must be two numbers LO,HI with LO < HI (got {text!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"{name} must be two finite numbers LO,HI with LO < HI (got {text!r})")
    return lo, hi


# --- size caps (the numbers are market.limits') -------------------------------------------------
#: integer parameters with an upper cap: name -> (lowest, highest allowed)
CAPS: dict[str, tuple[int, int]] = {
    "n_buyers": (1, TRADERS_MAX),
    "n_sellers": (1, TRADERS_MAX),
    "teams": (1, TRADERS_MAX),
    "period": (1, STEPS_MAX),
    "prices": (2, PRICES_MAX),
    "rounds": (1, ROUNDS_MAX),
    "clock_buckets": (1, STEPS_MAX),  # at most one slot per step of a period
}


def _check_caps(p: Params, say: Namer) -> None:
    for name, (lo, hi) in CAPS.items():
        value = getattr(p, name)
        if value is not None and value > hi:
            raise UsageError(f"{say(name)} must be an integer in [{lo}, {hi}] (got {value})")


def table_cells(p: Params) -> float:
    """Table cells the market's strategies would allocate, as each strategy counts its own
    (:meth:`~strategies.base.Strategy.market_table_cells`: the Q-learners' two roles, clock
    slots, rows and actions).

    Float: the members of a strategy on a side are its count times its share.
    """
    market = MarketSetting(rational=p.rational_learners,
                           clock_buckets=p.clock_buckets if p.clock else 1,
                           clock_parts=p.clock_parts,
                           learner_params=p.learner_params)
    return sum(
        n * share * specs.parse(spec).cls.market_table_cells(p.protocol, market)
        for n, mix in ((p.n_buyers, p.buyer_mix), (p.n_sellers, p.seller_mix))
        for spec, share in (mix or {}).items()
    )


#: every cap on the size of a market, in the order checked (after each value on its own);
#: the Q-learners' tables are bounded by what they cost, in :func:`memory_estimate` (a cap
#: on cells alone refused a million traders whose tables need 3 GiB of 23)
LIMITS: list[Callable[[Params, Namer], None]] = [_check_caps]


def _check_spec_files(p: Params, say: Namer) -> None:
    """What a mix's ``NAME:ARG`` names must fit this market: a saved Q-table is read and
    checked (size, layout, P and T) now, so a damaged or mismatched file ends the command
    before any run instead of failing every run."""
    for side, name in (("buyer", "buyer_mix"), ("seller", "seller_mix")):
        for spec in getattr(p, name) or {}:
            specs.check_for_game(spec, p.protocol, side, say(name))


# --- memory ---------------------------------------------------------------------------------
#: bytes per trader: its arrays, its Mesa agent and its share of the model's books (measured
#: about 600; rounded up)
TRADER_BYTES = 1024
#: bytes per agent record of the DataCollector (one trader at one collection; measured ~120)
AGENT_RECORD_BYTES = 160
#: bytes per step of the model's own records (model variables; measured ~1,300), and per
#: price level that saw deals in a step (the prices table)
STEP_BYTES = 2048
PRICE_ROW_BYTES = 32


def _check_memory(p: Params, say: Namer, steps: int | None) -> None:
    what = "the market" + (f" over {steps:,} steps" if steps else "")
    advice = (f"lower {say('n_buyers')}/{say('n_sellers')}, {say('prices')}/{say('rounds')}"
              + (", the steps" if steps else "")
              + (f" or record less ({say('agent_data')})" if p.agent_data != "none" else ""))
    check_memory(memory_estimate(p, steps), what, advice)


def memory_estimate(p: Params, steps: int | None = None) -> float:
    """Bytes a market of ``p`` holds: traders, Q-tables (twice: the learners' tables and their
    updates), one step's negotiations for every pair at once and, with ``steps``, the
    model's and agents' records of that many steps."""
    traders = p.n_buyers + p.n_sellers
    pairs = min(p.n_buyers, p.n_sellers)
    total = traders * TRADER_BYTES + 16 * table_cells(p) + negotiation_bytes(p.protocol, pairs)
    if steps:
        collections = {"step": steps, "period": steps // p.period + 1, "none": 0}[p.agent_data]
        total += collections * traders * AGENT_RECORD_BYTES
        total += steps * (STEP_BYTES + PRICE_ROW_BYTES * min(p.prices, pairs))
    return float(total)


# --- what tools that sweep parameters need to know -------------------------------------------
#: the keywords every Mesa model takes besides its own: a seed (an integer) and a generator
MESA_PARAMETERS: dict[str, tuple[tuple[type, ...] | None, Any]] = {
    "seed": ((int,), None),
    "rng": (None, None),
}
#: how the model runs, not what it models: the same tables either way (market.sim.engine)
ENGINE_PARAMETERS: dict[str, tuple[tuple[type, ...] | None, Any]] = {
    "engine": ((str,), "auto"),
}


def model_parameters(cls: type | None = None) -> dict[str, tuple[tuple[type, ...] | None, Any]]:
    """Parameter name -> (allowed scalar types, default), of the market or of ``cls.__init__``.

    Types come from the annotations (the scalar members ``int``, ``float``,
    ``bool``, ``str`` of a union), else from the default's type; ``()``
    means "any scalar" (no annotation, no default) and ``None`` "not a
    scalar" (ranges, mappings, callables), which a grid cannot sweep.
    ``cls``: another model class (its keywords); by default the market's own.
    """
    if cls is None:
        hints = typing.get_type_hints(Params)
        out = {f.name: (_scalar_types(hints.get(f.name), f.default), f.default)
               for f in fields(Params)}
        return {**out, **ENGINE_PARAMETERS, **MESA_PARAMETERS}
    sig = inspect.signature(cls.__init__)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # unresolvable annotations: fall back on defaults
        hints = {}
    out: dict[str, tuple[tuple[type, ...] | None, Any]] = {}
    for name, p in sig.parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is p.empty else p.default
        out[name] = (_scalar_types(hints.get(name), default), default)
    return out


def _scalar_types(hint: Any, default: Any) -> tuple[type, ...] | None:
    scalars = (bool, int, float, str)
    if hint is not None:
        args = typing.get_args(hint) if _is_union(hint) else (hint,)
        found = tuple(a for a in args if a in scalars)
        return found or None
    if default is None:
        return ()
    return (type(default),) if type(default) in scalars else None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)
