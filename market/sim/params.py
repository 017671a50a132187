"""The market's parameters, checked: the one check every caller runs.

Each parameter is declared once, in :mod:`market.sim.declared` (name,
default, what it may be, its help, flag and view control); :class:`Params`
has a field for each, and :func:`check` turns whatever a caller
has (a full set, or only the values it changes) into checked, normalised
``Params``: the model runs it on its own arguments, and the market command,
the batch runner (every grid point, before any run) and the browser view
run the same function, so a value is refused with the same words and the
same caps wherever it comes from. Messages name the parameter (or the
caller's name for it, e.g. a command-line flag) and the allowed range.

The checks run in order: each value on its own, by its declaration (the
caps are the declared ranges; the numbers live in :mod:`market.limits`),
the strategy mixes checked and normalised among them; then the files the
mixes name (a saved Q-table is read and checked against the market's P and
T, so a damaged or mismatched file is refused before any run, naming it);
last, the memory the run would need (:func:`memory_estimate`: traders,
Q-tables, one step's negotiations and, when the caller knows the number of
steps, what the run records) against the machine's.

:func:`~market.sim.signature.model_parameters` tells tools that sweep or draw parameters (the
batch runner, the plots) each keyword's scalar type and default.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from market.errors import UsageError
from market.game import pressure
from market.game.protocol import negotiation_bytes
from market.game.rules import Protocol
from market.limits import MONEY_MAX, STEPS_MAX, check_memory
from market.parameters import Param, carries, check_value
from market.sim import institutions, schedules
from market.sim.declared import (
    AGENT_DATA,
    BY_NAME,
    DISTRIBUTIONS,
    FIRST_MOVERS,
    INSTITUTIONS,
    LEARNER_PARAMS,
    NAMES,
    PARAMETERS,
)
from market.sim.network import Network, isolated_text
from market.sim.network import read as read_network
from strategies import specs
from strategies.base import MarketSetting

__all__ = ["AGENT_DATA", "DISTRIBUTIONS", "FIRST_MOVERS", "LEARNER_PARAMS", "NAMES", "Params",
           "check"]

#: a reservation-price distribution: a name, or ``f(rng, n, lo, hi) -> array``
Distribution = str | Callable[[np.random.Generator, int, float, float], np.ndarray]

#: the mix of a side whose mix is not given
DEFAULT_MIX = {"averaging": 1.0}


def _default(name: str) -> Any:
    """The declared default of parameter ``name`` (:data:`market.sim.declared.BY_NAME`)."""
    return BY_NAME[name].default


@dataclass(frozen=True)
@carries(pressure.OTHERS, after="buyer_discount")
class Params:
    """Every parameter of a market, checked and normalised: what :func:`check` returns.

    One field per declaration of :mod:`market.sim.declared`, in its order and
    with its default (a test holds the two equal); the market guide's table
    says what each means and allows. After :func:`check`, mixes are dicts of
    shares summing to 1, ranges pairs of floats and ``clock_buckets`` a number.
    """

    n_buyers: int = _default("n_buyers")
    n_sellers: int = _default("n_sellers")
    buyer_mix: Mapping[str, float] | None = _default("buyer_mix")
    seller_mix: Mapping[str, float] | None = _default("seller_mix")
    prices: int = _default("prices")
    rounds: int = _default("rounds")
    discount: float | None = _default("discount")
    seller_discount: float | None = _default("seller_discount")
    buyer_discount: float | None = _default("buyer_discount")
    period: int = _default("period")
    redraw: bool = _default("redraw")
    value_range: tuple[float, float] = _default("value_range")
    cost_range: tuple[float, float] = _default("cost_range")
    schedule: str = _default("schedule")
    value_dist: Distribution = _default("value_dist")
    cost_dist: Distribution = _default("cost_dist")
    institution: str = _default("institution")
    matching: str = _default("matching")
    loyalty_beta: float = _default("loyalty_beta")
    loyalty_gamma: float = _default("loyalty_gamma")
    loyalty_memory: int = _default("loyalty_memory")
    service: str = _default("service")
    loyal_state: bool = _default("loyal_state")
    network: str = _default("network")
    network_strict: bool = _default("network_strict")
    first: str = _default("first")
    teams: int | None = _default("teams")
    common_wallet: bool = _default("common_wallet")
    clock: bool = _default("clock")
    clock_parts: str = _default("clock_parts")
    clock_buckets: int | None = _default("clock_buckets")
    learner_params: str = _default("learner_params")
    rational_learners: bool = _default("rational_learners")
    strategy_params: Mapping[str, Mapping[str, Any]] | None = _default("strategy_params")
    agent_data: str = _default("agent_data")
    max_steps: int | None = _default("max_steps")
    revision: str = _default("revision")
    revision_rate: float = _default("revision_rate")
    selection: float = _default("selection")
    mutation: float = _default("mutation")
    inherit: str = _default("inherit")

    def kwargs(self) -> dict[str, Any]:
        """The parameters as keyword arguments of :class:`~market.sim.model.MarketModel`."""
        return {name: getattr(self, name) for name in NAMES}

    @functools.cached_property
    def protocol(self) -> Protocol:
        """The game's protocol of these parameters (made once: a market's build asked for it
        a dozen times)."""
        return Protocol(self.prices, self.rounds, *self.discounts,
                        **{d.name: getattr(self, d.name) for d in pressure.OTHERS})

    @functools.cached_property
    def values_and_costs(self) -> schedules.Schedule | None:
        """The schedule :attr:`schedule` names or writes out, read once (None: drawn from the
        ranges); what the market's traders and price grid are made from."""
        return schedules.parse(self.schedule)

    def setting(self, rng: np.random.Generator | None = None) -> MarketSetting:
        """What the market tells the strategies it builds
        (:meth:`~strategies.base.Strategy.for_market`)."""
        return MarketSetting(rational=self.rational_learners,
                             clock_buckets=self.clock_buckets if self.clock else 1,
                             clock_parts=self.clock_parts, learner_params=self.learner_params,
                             loyal_state=self.loyal_state, rng=rng)

    @functools.cached_property
    def graph(self) -> Network | None:
        """The graph :attr:`network` names, read once (None: everyone may meet)."""
        if not self.network:
            return None
        return read_network(self.network, self.n_sellers, self.n_buyers)

    @property
    def discounts(self) -> tuple[float, float]:
        """(Seller, Buyer) factors per offer: a side's own, else ``discount``, else 1."""
        both = 1.0 if self.discount is None else float(self.discount)
        return (both if self.seller_discount is None else float(self.seller_discount),
                both if self.buyer_discount is None else float(self.buyer_discount))


#: what names a parameter in a message: the parameter itself, or a caller's word for it
Namer = Callable[[str], str]


def check(params: Mapping[str, Any], names: Mapping[str, str] | None = None,
          steps: int | None = None, checked: Params | None = None) -> Params:
    """Check ``params`` (missing ones take their defaults) and return them normalised; or
    ``checked``, what this returned before (a command checked them against its own flags),
    as it is, with no parameter beside it.

    ``ValueError`` (a :class:`~market.errors.UsageError` for a file or the
    memory) naming the first bad parameter and its allowed range. ``names``
    maps a parameter to what the caller calls it in messages (the market
    command's flags). ``steps``: the length of the run, when the caller
    knows it, so that what the run records counts in the memory estimate.
    Mixes come back with their shares normalised to sum to 1 and zero shares
    dropped; ranges as floats; ``clock_buckets`` resolved.
    """
    if checked is not None:  # handed on whole: alone
        if params or not isinstance(checked, Params):
            raise TypeError("checked parameters (Params, as check returns them) come alone")
        return checked
    unknown = [k for k in params if k not in NAMES]
    if unknown:
        raise ValueError(f"unknown market parameter {unknown[0]!r} "
                         f"(choose from: {', '.join(NAMES)})")
    mapping = dict(names or {})

    def say(name: str) -> str:
        return mapping.get(name, name)

    _refuse_off_book(params, say)
    values = {d.name: value(d, params.get(d.name, d.default), say(d.name)) for d in PARAMETERS}
    if values["clock_buckets"] is None:
        values["clock_buckets"] = min(values["period"], 4)
    _check_revision(values, say)
    p = Params(**values)
    if p.teams is not None and p.teams > max(p.n_buyers, p.n_sellers):
        raise ValueError(f"{say('teams')} must be at most the larger side's traders "
                         f"({max(p.n_buyers, p.n_sellers):,}): a team needs a member "
                         f"(got {p.teams:,})")
    _check_institution(p, say)
    if p.loyal_state and p.matching != "loyalty":
        raise ValueError(f"{say('loyal_state')} shows learners whether a Buyer is loyal to her "
                         f"Seller: it needs {say('matching')} loyalty")
    _check_network(p, say)
    _check_schedule(p, say)
    _check_spec_files(p, say)
    _check_memory(p, say, steps)
    return p


def _check_revision(values: dict[str, Any], say: Namer) -> None:
    """Zero shares stay in a mix only where traders may revise (mutation can bring them in);
    revision needs a side that can change, so a mix of one strategy on both sides is refused
    rather than run to no effect."""
    mixes = ("buyer_mix", "seller_mix")
    if values["revision"] == "none":
        for m in mixes:
            values[m] = {k: v for k, v in values[m].items() if v > 0}
        return
    if all(len(values[m]) < 2 for m in mixes):
        raise ValueError(f"{say('revision')} needs a side whose mix lists two strategies or "
                         f"more (list one at share 0 for mutation to bring it in)")


def _refuse_off_book(params: Mapping[str, Any], say: Namer) -> None:
    """A double auction or a call market asks each trader for a quote through its compiled
    decision (:mod:`market.sim.auction`): every strategy of the mixes must have one. Checked
    on the mixes as given, from each strategy's class, before the mixes' own check, which
    for ``negmas`` and ``genius`` loads their libraries (seconds, and a progress line before
    the one line a refusal is); what is malformed is left to that check to word."""
    institution = params.get("institution", "pairs")
    if institution not in INSTITUTIONS or not institutions.get(institution).book:
        return
    for side in ("seller_mix", "buyer_mix"):
        mix = params.get(side)
        for spec, share in (mix.items() if isinstance(mix, Mapping) else ()):
            if isinstance(share, int | float) and share == 0:  # dropped from the mix
                continue
            try:
                why = specs.why_not_in_book(spec)
            except (ValueError, TypeError):  # a UsageError too: worded by the mix's check
                continue
            if why:
                raise ValueError(f"{say(side)}: {spec!r} cannot play in {say('institution')} "
                                 f"{institution} ({why}); there, every strategy must be "
                                 f"compiled ({', '.join(specs.book_strategies())}, or a rule "
                                 f"of your own)")


def _check_institution(p: Params, say: Namer) -> None:
    """Time pressure, which prices the offers of a bilateral negotiation, and partner choice,
    which picks the pairs, must be off in a double auction or a call market (their
    strategies: :func:`_refuse_off_book`)."""
    if institutions.get(p.institution).bilateral:
        return
    if p.matching != "random":
        raise ValueError(f"{say('matching')} {p.matching} chooses partners in bilateral "
                         f"bargaining: it needs {say('institution')} pairs, not "
                         f"{p.institution}")
    if p.first != _default("first"):
        raise ValueError(f"{say('first')} {p.first} says who opens a negotiation: it applies "
                         f"to {say('institution')} pairs only (a book has no opening offer)")
    if p.protocol.timed:
        raise ValueError(f"{say('institution')} {p.institution} has no offers to discount, "
                         f"cost or break down: time pressure (discounts, costs per offer, "
                         f"breakdown) applies to {say('institution')} pairs only")


def _check_network(p: Params, say: Namer) -> None:
    """A network's file is read now (a bad one ends the command before any run), in
    bilateral bargaining only; with ``network_strict``, nobody may be left without a
    partner."""
    if p.network_strict and not p.network:
        raise ValueError(f"{say('network_strict')} asks that {say('network')} leave nobody "
                         f"without a partner: give {say('network')} FILE")
    if not p.network:
        return
    if not institutions.get(p.institution).bilateral:
        raise ValueError(f"{say('network')} says who may bargain with whom: it needs "
                         f"{say('institution')} pairs, not {p.institution}")
    try:
        graph = p.graph
    except ValueError as exc:
        raise UsageError(str(exc).replace("network:", f"{say('network')}:", 1)) from None
    if p.network_strict and graph.isolated_buyers + graph.isolated_sellers:
        raise ValueError(f"{say('network')}: {isolated_text(graph)} "
                         f"({say('network_strict')})")


def _check_schedule(p: Params, say: Namer) -> None:
    """A schedule fits the traders (:func:`market.sim.schedules.check`) and fixes values and
    costs: there is nothing to redraw."""
    schedules.check(p.values_and_costs, p.schedule, p.n_buyers, p.n_sellers,
                    {k: say(k) for k in ("schedule", "n_buyers", "n_sellers", "prices")},
                    p.prices)
    if p.schedule != schedules.DRAWN and p.redraw:
        raise ValueError(f"{say('redraw')}: {say('schedule')} {p.schedule!r} fixes values and "
                         f"costs; redraw needs {say('schedule')} drawn")
    if p.schedule != schedules.DRAWN:  # what only drawn values read
        for name in ("value_range", "cost_range", "value_dist", "cost_dist"):
            if getattr(p, name) != _default(name):
                raise ValueError(f"{say(name)}: {say('schedule')} {p.schedule!r} fixes values "
                                 f"and costs, so it would be ignored; drop it, or draw values "
                                 f"({say('schedule')} drawn)")


def value(d: Param, v: Any, name: str) -> Any:
    """One parameter's value checked by its declaration and normalised; ``ValueError``
    naming ``name`` (the parameter, or the caller's word for it) and what is allowed."""
    if d.kind == "range":
        return _check_range(name, v)
    if d.kind == "mix":
        return check_mix(name, _mix(v))
    if d.kind == "text":  # the one text parameter: a value schedule
        schedules.parse(v, name)
        return v
    if d.kind == "file":  # a path, read by its own check (:func:`_check_network`)
        if v is None:
            return ""
        if not isinstance(v, str | os.PathLike):
            raise ValueError(f"{name} must be {d.allowed()} (got {v!r})")
        return os.fspath(v)
    if d.kind == "mapping":
        v = {} if v is None else v
        if not isinstance(v, Mapping) or not all(isinstance(x, Mapping) for x in v.values()):
            raise ValueError(f"{name} must map strategy names to keyword arguments "
                             f"(got {v!r})")
        return {k: dict(x) for k, x in v.items()}
    return check_value(d, v, name)


def _mix(mix: Mapping[str, float] | None) -> dict[str, float]:
    return dict(DEFAULT_MIX if mix is None else mix)


# --- ranges -------------------------------------------------------------------------------
def _check_range(name: str, value: Any) -> tuple[float, float]:
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
    return lo, hi



# --- mixes --------------------------------------------------------------------------------------
#: what :meth:`~market.sim.model.MarketModel.run` takes
STEPS = Param("steps", "int", 1, "steps to run", 0, STEPS_MAX)


def check_steps(steps: Any) -> int:
    """A number of steps to run (0 to :data:`~market.limits.STEPS_MAX`); ``ValueError``
    naming ``steps`` otherwise."""
    return int(check_value(STEPS, steps))


def check_mix(name: str, mix: dict[str, float]) -> dict[str, float]:
    """Strategy shares: known names, non-negative, summing to 1 (zero shares kept: :func:`check`
    drops them unless traders revise)."""
    if not mix:
        raise ValueError(f"{name} must name at least one strategy")
    out = {}
    for spec, share in mix.items():
        try:
            specs.parse(spec, name)
        except ValueError as exc:
            cut = "no file" in str(exc) or "unknown strategy" in str(exc)
            if cut and len(mix) > 1 and any(":" in k for k in mix):  # a name cut at ',' or '='?
                raise UsageError(f"{exc}{MIX_FILE_HINT}") from None
            raise
        try:
            share = float(share)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name}: share of {spec!r} must be a number (got {share!r})"
            ) from None
        if not math.isfinite(share) or share < 0:
            raise ValueError(f"{name}: share of {spec!r} must be >= 0 (got {share})")
        out[str(spec)] = share
    total = sum(out.values())
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"{name}: shares must sum to 1 (got {total:g})")
    # within the tolerance, normalise: counts by largest remainder then add up to n exactly
    return {k: v / total for k, v in out.items()}


#: said when a mix names a file: ',' and '=' separate a mix's entries and shares
MIX_FILE_HINT = ("; a file named in a mix cannot hold ',' or '=': rename it, or link it "
                 "under a plain name (ln -s 'a,b.npz' ab.npz)")


def parse_mix(text: str, name: str) -> dict[str, float]:
    """``"a=0.5,b=0.5"`` (a bare ``"a"`` is ``a=1``) -> shares as typed, for :func:`check`."""
    mix: dict[str, float] = {}
    parts = [x.strip() for x in text.split(",")]
    if len(parts) > 1 and not all(parts):
        raise UsageError(f"{name}: an empty member in {text!r} (two commas, or one at an end): "
                         f"list each strategy once, as NAME=SHARE separated by single commas")
    for part in parts:
        if not part:
            continue
        spec, eq, share = part.partition("=")
        spec = spec.strip()
        if not eq:
            share = "1"
        try:
            value = float(share)
        except ValueError:
            hint = MIX_FILE_HINT if ":" in spec else ""
            raise UsageError(
                f"{name}: share of {spec!r} must be a number (got {share!r}){hint}"
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


def table_cells(p: Params) -> float:
    """Table cells the market's strategies would allocate, as each strategy counts its own
    (:meth:`~strategies.base.Strategy.market_table_cells`: the Q-learners' two roles, clock
    slots, rows and actions).

    Float: the members of a strategy on a side are its count times its share.
    """
    return sum(cells for cells, _ in _tables(p))


def _tables(p: Params) -> list[tuple[float, bool]]:
    """Each strategy's table cells, and whether two copies of them live at once: tables read
    from a file, or repeated into a clock's slots, are written before the engine gathers
    them, and revision gathers every population's tables again while the old store lives
    (fresh tables are gathered from pages never written, :data:`TABLE_CELL_BYTES`)."""
    market = p.setting()
    out = []
    for n, mix in ((p.n_buyers, p.buyer_mix), (p.n_sellers, p.seller_mix)):
        for spec, share in (mix or {}).items():
            parsed = specs.parse(spec)
            out.append((n * share * parsed.cls.market_table_cells(p.protocol, market),
                        parsed.arg is not None or p.revision != "none"
                        or parsed.cls.market_tables_written(market)))
    return out


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
#: bytes a Q-table cell holds (float64). A learner's fresh tables (``np.zeros``) are pages the
#: system gives only when written, so the engine's store, into which they are gathered, is
#: their one copy in memory: 2,500,000 + 2,500,000 traders, the Sellers Q-learners, peaked
#: at 10.7 GiB, 7.0 GiB of it tables. Cells are counted twice where two copies live at once
#: (:func:`_tables`)
TABLE_CELL_BYTES = 8
#: bytes per edge of a network while it is read: networkx's graph (dicts of dicts, 370 a
#: edge measured on 200,000 edges), the file's text and the pairs while they are sorted
NETWORK_EDGE_BYTES = 512
#: bytes per agent record of the DataCollector at its peak (one trader at one collection,
#: with the frame made of them as a run ends: 247 measured, 100,000 + 100,000 traders at 20
#: and 40 steps)
AGENT_RECORD_BYTES = 256
#: the interpreter, numpy, numba, Mesa, the compiled engine and the plots (a 10 + 10
#: market's peak: 320 MiB)
RUNTIME_BYTES = 320 * 2**20
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


#: a remembered Seller: her id, the Buyer's preference and its choice weight (8 bytes each)
PREFERENCE_BYTES = 24
#: a Buyer's place in a step's queues and the step's buffers of her visit (ids, levels,
#: prices, gains, the negotiation's actions are in :func:`negotiation_bytes`)
QUEUE_BYTES = 96


def memory_estimate(p: Params, steps: int | None = None) -> float:
    """Bytes a market of ``p`` holds at its peak: the runtime (:data:`RUNTIME_BYTES`),
    traders, Q-tables (:data:`TABLE_CELL_BYTES`) or what a population needs while it is
    built (a strategy's solve of its game), whichever is larger, one step's negotiations for
    every pair at once, the Buyers' preferences under partner choice
    (:data:`PREFERENCE_BYTES` per remembered Seller, and a step's queue) and, with
    ``steps``, the model's and agents' records of that many steps."""
    traders = p.n_buyers + p.n_sellers
    pairs = min(p.n_buyers, p.n_sellers)
    tables = TABLE_CELL_BYTES * sum(cells * (2 if twice else 1) for cells, twice in _tables(p))
    built = sum(specs.parse(spec).cls.market_build_bytes(p.protocol)
                for mix in (p.buyer_mix, p.seller_mix) for spec in (mix or {}))
    # a solve is done and freed before the tables are gathered into the engine's store
    # (fresh tables are pages not yet written): the larger of the two is the peak's
    total = (RUNTIME_BYTES + traders * TRADER_BYTES + max(tables, built)
             + negotiation_bytes(p.protocol, pairs))
    if p.matching != "random" or p.network:  # a visit per Buyer a step: as many
        memory = p.loyalty_memory if p.matching != "random" else 1  # negotiations as Buyers
        total += p.n_buyers * ((memory + 1) * PREFERENCE_BYTES + QUEUE_BYTES)
    if p.network:  # the graph as each Buyer's Sellers, and networkx's copy while it is read
        total += 8 * (p.n_buyers + 1) + NETWORK_EDGE_BYTES * p.graph.edges
        total += negotiation_bytes(p.protocol, p.n_buyers) - negotiation_bytes(p.protocol,
                                                                               pairs)
    if steps:
        collections = {"step": steps, "period": steps // p.period + 1, "none": 0}[p.agent_data]
        total += collections * traders * AGENT_RECORD_BYTES
        total += steps * (STEP_BYTES + PRICE_ROW_BYTES * min(p.prices, pairs))
    return float(total)
