"""The marketplace: a Mesa model in which Sellers and Buyers pair up and bargain every step.

Each step, the traders who have not yet traded their unit this period are
paired at random (the longer side's extra traders wait), every pair runs the
alternating-offers protocol with the two traders' strategies, deals settle,
learners learn, and the DataCollector records the step. A trading period
lasts ``period`` steps (Gode and Sunder's markets: one unit per trader per
period); then everybody is back, with values and costs kept or redrawn, and
traders may revise their strategies.

The model owns that schedule and delegates the rest, one concept per module:
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

from market.sim import collector, engine, ledger, params, population, revision
from market.sim.agents import TraderArrays, make_agents
from market.sim.collector import MarketCollector
from market.sim.ledger import Ledger
from market.sim.state import Market
from market.sim.traces import LastStep


class MarketModel(mesa.Model):
    """Many Sellers and Buyers bargaining in pairs with pluggable strategies.

    The keywords are the market's declared parameters
    (:class:`~market.sim.params.Params` says each one's meaning), checked by
    :func:`market.sim.params.check` (or given, positionally, as that check
    returned them); ``engine`` picks how a step runs (the same tables either
    way); ``seed`` and ``rng`` are Mesa's.
    """

    @params.declare_signature
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
        self.period = self.step_in_period = 0  # step_in_period: steps done in the period
        self.last_step = LastStep(self.market, (self.seller_agents, self.buyer_agents))
        self._open_period(0)
        self.agents_due = p.agent_data == "step"
        self.datacollector = MarketCollector(collector.variables(collector.snapshot(self, None)),
                                             ledger.keys())
        self.datacollector.collect(self)

    def step(self) -> None:
        """A new period when due (revising first); pair, negotiate, settle, learn; collect."""
        self._open_when_due()
        done = self.engine.step(self.market, self.step_in_period, self.rng,
                                self.ledger.equilibrium.price_mid)
        self.market.stepped()
        self.last_step = self.last_step.after(done)
        levels = None if done.record is None else done.record.level[done.deal]
        self._record(len(done.sellers), done.sums, levels, done.earnings)

    def run_model(self) -> None:
        """Mesa's ``run_model``: step while ``running`` (until ``max_steps``), a period at a
        time (:meth:`run`)."""
        while self.running:
            self.run(self.params.period)

    def run(self, steps: int) -> None:
        """``steps`` steps (fewer at ``max_steps``): the tables of as many :meth:`step` calls,
        faster: a period's steps in one compiled call where nothing has to be seen between
        them (:func:`~market.sim.engine.in_one_call`), and on into the next periods where
        nothing happens between periods (:func:`~market.sim.engine.across_periods`)."""
        steps = params.check_steps(steps)
        while steps > 0 and self.running:
            self._open_when_due()  # revising first: who changed strategy decides the way
            if not engine.in_one_call(self.engine, self.market):
                self.step()
                steps -= 1
                continue
            k = min(steps, engine.CALL_STEPS)
            if not engine.across_periods(self.market):
                k = min(k, self.params.period - self.step_in_period)
            if self.params.max_steps is not None:
                k = min(k, self.params.max_steps - self.steps)
            steps -= self._steps(k)

    def _steps(self, k: int) -> int:
        """Up to ``k`` steps in one compiled call: all but the last collected as the call wrote
        them and entered into the books, a period's part at a time (each period closed and
        the next opened as the call did), the last recorded as a step."""
        made = self.engine.steps(self.market, self.step_in_period, k, self.rng,
                                 self.ledger.equilibrium.price_mid)
        self.market.stepped()
        j = 0
        while j < made.done - 1:  # no agent data is due, none is the max_steps'th
            n = min(made.done - 1 - j, self.params.period - self.step_in_period)
            rows = made.rows[j:j + n]
            self.datacollector.collect_steps(self, rows, made.levels, made.offsets[j:j + n + 1])
            self.ledger.enter_rows(rows)
            self.steps += n  # what Mesa's step() does first
            self.step_in_period += n
            j += n
            if self.step_in_period == self.params.period:
                self._close_period()
                self._open_period(self.period + 1, opened=True)
        if made.done:
            self.steps += 1
            self._record(*made.last_record(self.market))
        if made.error is not None:
            raise made.error
        self.last_step = self.last_step.after(made.last)
        return made.done

    def _open_when_due(self) -> None:
        """At a period's end, before the next step: revise (if the market does), open."""
        if self.step_in_period == self.params.period:
            if self.params.revision != "none":
                self.revise_strategies()
            self._open_period(self.period + 1)

    def _open_period(self, period: int, opened: bool = False) -> None:
        """Everybody holds a unit again (values and costs redrawn if asked; ``opened``: a
        compiled call did it); open the books."""
        self.period, self.step_in_period = period, 0
        if not opened:
            self.market.open_period(period == 0, self.rng)
        self.ledger.open_period(self.market.equilibrium)

    def _close_period(self) -> None:
        """The closed period's row (and its shares, when traders revise)."""
        self.datacollector.add_period({"period": self.period, "last_step": self.steps,
                                       **self.ledger.period_figures()})
        if self.params.revision != "none":
            self.datacollector.add_shares(revision.share_rows(self.market, self.period,
                                                              self.steps))

    def _record(self, pairs: int, sums: tuple | None, levels: np.ndarray | None,
                earnings: tuple | None = None) -> None:
        """Enter a step made (``sums``: its ledger sums, ``levels``: its deals', both None when
        nobody met); collect it (``earnings`` as it ended, when they cannot be read now), and
        at a period's end its row (and agent data, if due); stop at ``max_steps``."""
        trades = None
        if sums is not None:
            trades = self.ledger.enter(sums)
            self.datacollector.add_prices(self.steps, self.period, levels, self.market.grid)
        self.step_in_period += 1
        closing = self.step_in_period == self.params.period
        due = self.params.agent_data
        self.agents_due = due == "step" or (closing and due == "period")
        if closing:
            self._close_period()
        self.datacollector.collect(self, trades, pairs, earnings)
        if self.params.max_steps is not None and self.steps >= self.params.max_steps:
            self.running = False  # Mesa's run_model (and batch_run) stop here

    def revise_strategies(self) -> None:
        """Each side's revisers change strategy by the market's protocol
        (:mod:`~market.sim.revision`); :meth:`step` runs it at each period's end when the
        market revises; call it to revise now."""
        if revision.revise_market(self.market, self.rng):
            self.engine.rebind(self.market)

    def set_strategy(self, side: int | str, traders: Any, strategy: int | str,
                     like: Any = None) -> None:
        """Traders ``traders`` (indices into ``side``'s arrays) play ``strategy`` from the next
        step on: a name of the side's mix, its index in ``market.names[side]``, or a new spec,
        which joins the mix as a new population (with the compiled engine, only a strategy
        that has a compiled decision).

        Each starts as a fresh member of that strategy (a learner with fresh
        tables, its parameters as the market draws them), or, with ``like``
        (one trader per mover, already playing ``strategy``), as a copy of
        that trader's member. Nothing is rebuilt or compiled: the engine
        reads each trader's strategy from its arrays.
        """
        m = self.market
        if population.set_strategy(m.books, m.names, m.strategies, side, traders, strategy,
                                   like, self.params, self.rng,
                                   compiled_only=self.engine.name == "compiled"):
            self.engine.rebind(m)

    @property
    def sellers(self) -> TraderArrays:
        return self.market.books[0]

    @property
    def buyers(self) -> TraderArrays:
        return self.market.books[1]

    def summary(self) -> dict[str, float]:
        """Flat summary of the run so far (all values floats; NaN where undefined)."""
        periods = self.period + (self.step_in_period > 0)
        return {"steps": float(self.steps), "periods": float(periods),
                **self.ledger.run_figures(), **self.market.earnings()}


def engine_for(market: Market, kind: str) -> engine.CompiledEngine | engine.LockstepEngine:
    """The engine ``kind`` (``auto``, ``compiled``, ``lockstep``) for this market; ``auto``
    says so (once, as a notice) when some strategy puts it on the lockstep path."""
    cls, missing = engine.choose(market.strategies, kind, market.params.institution)
    if missing and kind == "auto":
        engine.say_lockstep(missing)
    if cls is engine.CompiledEngine:
        return engine.CompiledEngine(market)
    return engine.LockstepEngine()
