"""The marketplace: a Mesa model in which Sellers and Buyers pair up and bargain every step.

Each step, the traders who have not yet traded their unit this period are
paired at random (the longer side's extra traders wait; or each Buyer visits a Seller she
chooses, :mod:`~market.sim.matching`), every pair runs the
alternating-offers protocol with the two traders' strategies, deals settle,
learners learn, and the DataCollector records the step. A trading period
lasts ``period`` steps (Gode and Sunder's markets: one unit per trader per
period); then everybody is back, with values and costs kept or redrawn, and
traders may revise their strategies.

The model owns that schedule (:class:`~market.sim.periods.Periods` says where it stands,
the model does what it says) and delegates the rest, one concept per module:
the parameters (:mod:`~market.sim.params`), the market's state
(:class:`~market.sim.state.Market`: both sides' arrays and strategies), the
engine that steps it (:mod:`~market.sim.engine`), the books
(:mod:`~market.sim.ledger`), data collection (:mod:`~market.sim.collector`:
``model.datacollector`` has the frames), strategy revision
(:mod:`~market.sim.revision`) and the last step's negotiations
(:mod:`~market.sim.traces`: ``model.last_step``).

Speed: a step is one compiled call on the market's arrays (or, for
strategies that decide in Python, a handful of numpy operations), so 100,000
traders step in well under a second. The Mesa agents
(:class:`~market.sim.agents.Seller`, :class:`~market.sim.agents.Buyer`) are
views of those arrays, so ``model.agents`` always shows the live state.
Every random draw uses ``model.rng`` (Mesa's numpy Generator), so the same
``seed`` gives the same tables bit for bit.
"""

from __future__ import annotations

from typing import Any

import mesa
import numpy as np

from market.processes import compiled_code
from market.sim import collector, engine, ledger, params, population, revision, signature
from market.sim.agents import TraderArrays, make_agents
from market.sim.collector import MarketCollector
from market.sim.ledger import Ledger
from market.sim.partners import COLUMNS as partner_columns
from market.sim.periods import Periods
from market.sim.state import Market
from market.sim.traces import LastStep


class MarketModel(mesa.Model):
    """Many Sellers and Buyers bargaining in pairs with pluggable strategies: the keywords are
    the market's declared parameters (:class:`~market.sim.params.Params`), checked by
    :func:`market.sim.params.check` (or given, positionally, as it returned them); ``engine``
    picks how a step runs (the same tables either way); ``seed`` and ``rng`` are Mesa's."""

    @signature.declare_signature
    def __init__(self, checked: params.Params | None = None, /, *, engine: str = "auto",
                 seed: int | None = None, rng: Any = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, rng=rng)
        if kwargs or not isinstance(checked, params.Params):  # keywords: checked here (and
            checked = params.check(kwargs, checked=checked)  # checked Params with company refused)
        self.params = p = checked
        self.market = Market.build(p, self.rng)
        self.seller_agents, self.buyer_agents = make_agents(self, self.market.uid)
        self.engine = engine_for(self.market, engine)
        self.ledger = Ledger()
        #: the schedule: trading periods of ``period`` steps (:mod:`~market.sim.periods`)
        self.periods = Periods(p.period)
        self.last_step = LastStep(self.market, (self.seller_agents, self.buyer_agents))
        self._open_period(0)
        self.agents_due = p.agent_data == "step"  # the collector records them at each step
        partners = partner_columns if self.market.partners.loyalty else ()
        self.datacollector = MarketCollector(collector.variables(collector.snapshot(self, None)),
                                             (*ledger.keys(), *partners))
        self.datacollector.collect(self)

    def step(self) -> None:
        """A new period when due (revising first); pair, negotiate, settle, learn; collect.
        Whole or not at all: a Ctrl-C meanwhile is raised when the step is recorded."""
        with compiled_code():
            self._open_when_due()
            if engine.in_one_call(self.engine, self.market):
                self._steps(1, first=self.steps)  # the step Mesa's step() counted
                return
            done = self.engine.step(self.market, self.periods.done, self.rng,
                                    self.ledger.equilibrium.price_mid)
            self.market.stepped()
            self.last_step = self.last_step.after(done.last)
            self._record(*done.last_record())

    def run_model(self) -> None:
        """Mesa's ``run_model``: a period at a time (:meth:`run`) while ``running``."""
        while self.running:
            self.run(self.params.period)

    def run(self, steps: int) -> None:
        """``steps`` steps (fewer at ``max_steps``): the tables of as many :meth:`step` calls,
        faster: in one compiled call where nothing has to be seen between them, up to a
        period's end or on (:func:`~market.sim.engine.call_steps`)."""
        steps = params.check_steps(steps)
        if self.params.max_steps is not None:  # where the model stops running
            steps = min(steps, self.params.max_steps - self.steps)
        while steps > 0 and self.running:
            self._open_when_due()  # revising first: who changed strategy decides the way
            if not engine.in_one_call(self.engine, self.market):
                self.step()
                steps -= 1
                continue
            with compiled_code():  # the call's steps recorded whole (as step())
                steps -= self._steps(engine.call_steps(self.market, self.periods.done, steps),
                                     first=self.steps + 1)

    def _steps(self, k: int, first: int) -> int:
        """Up to ``k`` steps in one compiled call, numbered from ``first``, kept as it wrote them
        and entered into the books a period's part at a time (the collector makes their rows
        when read); a period that ends among them closed (opened again if the call ran on into
        the next). Mesa's counter ends at the last step made."""
        made = self.engine.steps(self.market, self.periods.done, k, self.rng,
                                 self.ledger.equilibrium.price_mid)
        self.market.stepped()
        for rows, offsets in made.parts(self.periods):
            if self.periods.ended:  # the call ran on into the next period
                self._open_period(self.period + 1, opened=True)
            self.datacollector.collect_steps(self, first, rows, made.levels, offsets,
                                             made.names)
            self.ledger.enter_rows(rows)
            first += len(rows)
            self.steps = first - 1  # Mesa's counter: the steps made so far
            if self.periods.advance(len(rows)):
                self.datacollector.close_period(self)
        self.steps = first - 1  # also when none was made (an illegal action at the first)
        self._stop_at_max_steps()
        if made.error is not None:
            raise made.error
        self.last_step = self.last_step.after(made.last)
        return made.done

    def _open_when_due(self) -> None:
        """At a period's end, before the next step: revise (if the market does), open."""
        if self.periods.ended:
            if self.params.revision != "none":
                self.revise_strategies()
            self._open_period(self.period + 1)

    def _open_period(self, period: int, opened: bool = False) -> None:
        """A period opens: everybody holds a unit again (``opened``: a compiled call did)."""
        self.periods.open(period)
        if not opened:
            self.market.open_period(period == 0, self.rng)
        self.ledger.open_period(self.market.equilibrium)

    def _record(self, pairs: int, sums: tuple | None, levels: np.ndarray | None,
                earnings: tuple | None = None) -> None:
        """Enter a step made (``sums``: its ledger sums, ``levels``: its deals', both None when
        nobody met); at a period's end, close it; collect the step (``earnings`` as it ended,
        when they cannot be read now); stop at ``max_steps``."""
        trades = None
        if sums is not None:
            trades = self.ledger.enter(sums)
            self.datacollector.add_prices(self.steps, self.period, levels, self.market.grid)
        if self.periods.advance():
            self.datacollector.close_period(self)
        self.datacollector.collect(self, trades, pairs, earnings)
        self._stop_at_max_steps()

    def _stop_at_max_steps(self) -> None:
        if self.params.max_steps is not None and self.steps >= self.params.max_steps:
            self.running = False  # Mesa's run_model (and batch_run) stop here

    def revise_strategies(self) -> None:
        """Each side's revisers change strategy by the market's protocol
        (:mod:`~market.sim.revision`): at each period's end when the market revises, or now."""
        if revision.revise_market(self.market, self.rng):
            self.engine.rebind(self.market)

    def set_strategy(self, side: int | str, traders: Any, strategy: int | str,
                     like: Any = None) -> None:
        """Traders ``traders`` (indices into ``side``'s arrays) play ``strategy`` from the next
        step on (a name of the side's mix, its index in ``market.names[side]``, or a new spec,
        which joins the mix; compiled engine: one with a compiled decision), each a fresh
        member (fresh tables, parameters drawn as the market draws them) or, with ``like``
        (one trader per mover, already playing it), a copy of that trader's member. Nothing
        is rebuilt or compiled: the engine reads each trader's strategy from its arrays."""
        m = self.market
        if population.set_strategy(m.books, m.names, m.strategies, side, traders, strategy,
                                   like, self.params, self.rng,
                                   compiled_only=self.engine.name == "compiled"):
            self.engine.rebind(m)

    @property
    def period(self) -> int:
        """The trading period the market is in (from 0)."""
        return self.periods.period

    @property
    def step_in_period(self) -> int:
        """Steps made in the current period (``period`` of them: it has ended)."""
        return self.periods.done

    @property
    def sellers(self) -> TraderArrays:
        return self.market.books[0]

    @property
    def buyers(self) -> TraderArrays:
        return self.market.books[1]

    def summary(self) -> dict[str, float]:
        """Flat summary of the run so far (all values floats; NaN where undefined); under partner
        choice, the figures of the period now open or last closed
        (:func:`market.sim.partners.figures`)."""
        periods = self.period + (self.step_in_period > 0)
        return {"steps": float(self.steps), "periods": float(periods),
                **self.ledger.run_figures(), **self.market.earnings(),
                **self.market.partner_figures()}


def engine_for(market: Market, kind: str) -> engine.CompiledEngine | engine.LockstepEngine:
    """The engine ``kind`` (``auto``, ``compiled``, ``lockstep``) for this market; ``auto``
    says so (once, as a notice) when some strategy puts it on the lockstep path."""
    cls, missing = engine.choose(market.strategies, kind, market.params.institution,
                                 market.params.matching, bool(market.params.network))
    if missing and kind == "auto":
        engine.say_lockstep(missing)
    if cls is engine.CompiledEngine:
        return engine.CompiledEngine(market)
    return engine.LockstepEngine()
