"""The marketplace: a Mesa model in which Sellers and Buyers pair up and bargain every step.

Each step, the traders who have not yet traded their unit this period are
paired at random (the longer side's extra traders wait), every pair runs the
alternating-offers protocol (:func:`market.game.protocol.negotiate`) with the two
traders' strategies, deals settle, learners learn, and the DataCollector
records the step. A trading period lasts ``period`` steps (Gode and
Sunder's markets: one unit per trader per period); then everybody is back,
with values and costs kept or redrawn.

The model owns that schedule and delegates the rest, one concept per module:
parameters (:mod:`~market.sim.params`), who trades (:mod:`~market.sim.population`),
settling and rewards (:mod:`~market.sim.exchange`), running totals and the
figures made of them (:mod:`~market.sim.ledger`), data collection
(:mod:`~market.sim.collector`) and the last step's negotiations
(:mod:`~market.sim.traces`).

Speed: the state of each side lives in arrays (:class:`~market.sim.agents.TraderArrays`)
and a step is a handful of numpy operations plus one protocol run grouped by
strategy pair, so 100,000 traders step in well under a second. The Mesa
agents (:class:`~market.sim.agents.Seller`, :class:`~market.sim.agents.Buyer`) are
views of those arrays, so ``model.agents`` always shows the live state.

Every random draw uses ``model.rng`` (Mesa's numpy Generator), so the same
``seed`` gives the same tables bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import mesa
import numpy as np
import pandas as pd

from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER, side_index
from market.sim import engine as engines
from market.sim import exchange, ledger, params, population
from market.sim.agents import AGENT_COLUMNS, Buyer, Seller, Trader, TraderArrays, agent_columns
from market.sim.collector import MarketCollector
from market.sim.ledger import Ledger, Settlement
from market.sim.params import Distribution
from market.sim.revision import Revision, revise
from market.sim.traces import LastStep, PairTrace
from market.sim.yardsticks import Equilibrium, competitive_equilibrium
from strategies.base import Strategy


class MarketModel(mesa.Model):
    """Many Sellers and Buyers bargaining in pairs with pluggable strategies.

    The keywords are :class:`~market.sim.params.Params`' (each one's meaning
    is written there), checked by :func:`market.sim.params.check`; ``seed``
    and ``rng`` are Mesa's, and every random draw of the model uses ``self.rng``.
    """

    def __init__(
        self,
        n_buyers: int = 50,
        n_sellers: int = 50,
        buyer_mix: Mapping[str, float] | None = None,
        seller_mix: Mapping[str, float] | None = None,
        prices: int = 5,
        rounds: int = 5,
        discount: float | None = None,
        seller_discount: float | None = None,
        buyer_discount: float | None = None,
        breakdown: float = 0.0,
        seller_cost: float = 0.0,
        buyer_cost: float = 0.0,
        period: int = 10,
        redraw: bool = False,
        value_range: tuple[float, float] = (0.0, 100.0),
        cost_range: tuple[float, float] = (0.0, 100.0),
        value_dist: Distribution = "uniform",
        cost_dist: Distribution = "uniform",
        first: str = "random",
        teams: int | None = None,
        common_wallet: bool = False,
        clock: bool = False,
        clock_parts: str = "both",
        clock_buckets: int | None = None,
        learner_params: str = "fixed",
        rational_learners: bool = True,
        strategy_params: Mapping[str, Mapping[str, Any]] | None = None,
        agent_data: str = "period",
        max_steps: int | None = None,
        revision: str = "none",
        revision_rate: float = 0.1,
        selection: float = 1.0,
        mutation: float = 0.0,
        inherit: str = "fresh",
        engine: str = "auto",
        seed: int | None = None,
        rng: Any = None,
    ) -> None:
        super().__init__(seed=seed, rng=rng)
        given = {k: v for k, v in locals().items() if k in params.NAMES}  # the keywords above
        self.params = p = params.check(given)
        self.protocol, self.period_length, self.teams = p.protocol, p.period, p.teams
        self.common_wallet, self.mixes = p.common_wallet, (p.seller_mix, p.buyer_mix)
        lo, hi = min(p.value_range[0], p.cost_range[0]), max(p.value_range[1], p.cost_range[1])
        self.grid = PriceGrid(lo, hi, p.prices)

        # who trades: arrays first, then the Mesa agents that view them
        self._books, self._names, self._strategies = population.populate(p, self.protocol, self.rng)
        self.team_size = population.assign_teams(*self._books, p.teams, self.rng)
        self.revision = Revision(p.revision, p.revision_rate, p.selection, p.mutation,
                                 p.inherit)
        self._switches = [0, 0]  # strategy changes of the run so far, per side
        self._period_base = (np.zeros(0), np.zeros(0))  # earnings when the period opened
        self.n_teams = len(self.team_size)
        self._levels = population.acceptable_levels(self.grid, *self._books)
        self.seller_agents = [Seller(self, i) for i in range(len(self.sellers))]
        self.buyer_agents = [Buyer(self, i) for i in range(len(self.buyers))]
        release_agent_ids(self)  # all our agents exist now
        self._uid = tuple(np.array([a.unique_id for a in agents], dtype=np.int64)
                          for agents in (self.seller_agents, self.buyer_agents))

        # the books of the run, the last step, and what the DataCollector reads
        self.ledger = Ledger()
        self.period = self.step_in_period = 0  # step_in_period: steps done in the period
        self._last = LastStep()
        self._team_cache: tuple[int, np.ndarray] = (-1, np.zeros(0))
        self._start_period(0)
        self.variables = self._variables(ledger.NO_TRADES, 0)
        self._collect_agents_now = p.agent_data == "step"
        self._market = engines.Market(
            self.protocol, self._books, self._levels, self._strategies,
            {"random": exchange.OPEN_RANDOM, "seller": SELLER, "buyer": BUYER}[p.first],
            self.grid.lo, self.grid.step, self.grid.hi - self.grid.lo,
            self.team_size if p.common_wallet else np.zeros(0, dtype=np.int64))
        kind, missing = engines.choose(self._strategies, engine)
        self.engine = kind(self._market) if kind is engines.CompiledEngine else kind()
        if missing and engine == "auto":
            engines.say_lockstep(missing)
        self.datacollector = MarketCollector(self.variables, ledger.keys())
        self.datacollector.collect(self)

    # --- the schedule ---------------------------------------------------------------------
    def step(self) -> None:
        """A new period when due; pair, negotiate, settle, learn; collect."""
        if self.step_in_period == self.period_length:
            if self.revision.protocol != "none":
                self.revise_strategies()
            self._start_period(self.period + 1)
        time_left = self.period_length - self.step_in_period if self.params.clock else -1
        done = self.engine.step(self._market, time_left, self.rng)
        self._last = LastStep(done.sellers, done.buyers)
        self._trades = ledger.NO_TRADES
        if done.record is not None:
            self._enter(Settlement(done.record, done.deal, done.prices, done.seller_gain,
                                   done.buyer_gain))
            self._last = LastStep(done.sellers, done.buyers, done.record, done.prices)
        self.step_in_period += 1
        self._collect()
        if self.params.max_steps is not None and self.steps >= self.params.max_steps:
            self.running = False  # Mesa's run_model (and batch_run) stop here

    def _start_period(self, period: int) -> None:
        """Everybody holds a unit again (values and costs redrawn if asked); open the books."""
        self.period, self.step_in_period = period, 0
        if period > 0:
            for book in self._books:
                book.traded[:] = False
            if self.params.redraw:
                for book in self._books:
                    book.reservation[:] = population.draw(self.params, book.side, len(book),
                                                          self.rng)
                self._levels = population.acceptable_levels(self.grid, *self._books)
                self._market.levels = self._levels
        eq = competitive_equilibrium(self.buyers.reservation, self.sellers.reservation)
        self.ledger.open_period(eq)
        if self.revision.protocol != "none":
            self._period_base = (self.sellers.earnings.copy(), self.buyers.earnings.copy())

    def _enter(self, settled: Settlement) -> None:
        """The step's deals enter the ledger and the prices table."""
        self._trades = self.ledger.settle(settled)
        self.datacollector.add_prices(self.steps, self.period,
                                      settled.record.level[settled.deal], self.grid)

    def _collect(self) -> None:
        """The step's variables; at a period's end its row (and agent data, if due); collect."""
        self.variables = self._variables(self._trades, len(self._last))
        closing = self.step_in_period == self.period_length
        due = self.params.agent_data
        self._collect_agents_now = due == "step" or (closing and due == "period")
        if closing:
            self.datacollector.add_period({"period": self.period, "last_step": self.steps,
                                           **self.ledger.period_figures()})
            if self.revision.protocol != "none":
                self.datacollector.add_shares(self._share_rows())
        self.datacollector.collect(self)

    def _variables(self, trades: dict[str, float], pairs: int) -> dict[str, float]:
        """Model variables: the step's trades, the period so far, earnings of the run so far."""
        out = ledger.step_figures(self.steps, self.period, pairs, trades,
                                  self.ledger.period_figures())
        out.update(ledger.run_columns(self.ledger.run_figures()))
        out.update(self._earnings())
        if self.revision.protocol != "none":  # each strategy's share of its side, per step
            for side, side_name in ((SELLER, "seller"), (BUYER, "buyer")):
                book = self._books[side]
                counts = np.bincount(book.strategy, minlength=len(self._names[side]))
                for name, c in zip(self._names[side], counts.tolist(), strict=False):
                    out[f"share.{side_name}.{name}"] = c / len(book)
                out[f"switches.{side_name}"] = self._switches[side]
        return out

    # --- strategy revision ---------------------------------------------------------------------
    def period_payoffs(self, side: int) -> np.ndarray:
        """Each trader's payoff in the period so far: its earnings since the period opened
        (its team's per member under a common wallet)."""
        book = self._books[side]
        own = book.earnings - self._period_base[side]
        if not self.common_wallet:
            return own
        pooled = np.bincount(np.concatenate([self.sellers.team, self.buyers.team]),
                             weights=np.concatenate([
                                 self.sellers.earnings - self._period_base[SELLER],
                                 self.buyers.earnings - self._period_base[BUYER]]),
                             minlength=self.n_teams)
        return (pooled / self.team_size)[book.team]

    def revise_strategies(self) -> None:
        """Each side's revisers change strategy by the market's protocol
        (:mod:`~market.sim.revision`); the movers join their new populations, fresh or as
        copies of their models (``inherit``). :meth:`step` runs it at each period's end when
        the market revises; call it to revise now."""
        span = self.grid.hi - self.grid.lo
        grew = False
        for side in (SELLER, BUYER):
            book, names = self._books[side], self._names[side]
            new, model = revise(self.revision, book.strategy, self.period_payoffs(side),
                                len(names), span, self.rng)
            moved = new != book.strategy
            self._switches[side] += int(moved.sum())
            copy = model >= 0 if self.revision.inherit == "copy" else np.zeros_like(moved)
            rows = np.where(copy, book.member[np.maximum(model, 0)], -1)  # before anyone moves
            for g in np.unique(new[moved]).tolist():
                into = moved & (new == g)
                copied = np.flatnonzero(into & copy)
                fresh = np.flatnonzero(into & ~copy)
                grew |= population.reassign(book, names, self._strategies[side], copied, g,
                                            rows[copied], self.params, self.protocol, self.rng)
                grew |= population.reassign(book, names, self._strategies[side], fresh, g, None,
                                            self.params, self.protocol, self.rng)
        if grew:  # else every seat was written in place, into the arrays the engine reads
            self.engine.rebind(self._market)

    def _share_rows(self) -> list[dict[str, Any]]:
        out = []
        for side, side_name in ((SELLER, "seller"), (BUYER, "buyer")):
            book, names = self._books[side], self._names[side]
            counts = np.bincount(book.strategy, minlength=len(names))
            sums = np.bincount(book.strategy, weights=self.period_payoffs(side),
                               minlength=len(names))
            for g, name in enumerate(names):
                out.append({"period": self.period, "last_step": self.steps, "side": side_name,
                            "strategy": name, "traders": int(counts[g]),
                            "share": counts[g] / len(book),
                            "mean_earnings": sums[g] / counts[g] if counts[g] else math.nan})
        return out

    def shares_frame(self) -> pd.DataFrame:
        """One row per closed period, side and strategy of the mix: traders, share and mean
        earnings in the period (recorded when traders revise)."""
        return self.datacollector.get_table_dataframe("shares")

    def _earnings(self) -> dict[str, float]:
        wallets = None if self.teams is None else self.team_wallets()
        return ledger.earnings(self._books, self._names, self.teams, wallets)

    # --- changing who plays what -----------------------------------------------------------
    def set_strategy(self, side: int | str, traders: Any, strategy: int | str,
                     like: Any = None) -> None:
        """Traders ``traders`` (indices into ``side``'s arrays) play ``strategy`` from the next
        step on: a name of the side's mix or its index in :meth:`strategy_names`.

        Each starts as a fresh member of that strategy (a learner with fresh
        tables, its parameters as the market draws them), or, with ``like``
        (one trader per mover, already playing ``strategy``), as a copy of
        that trader's member. The market is not rebuilt and nothing is
        compiled: the engine reads each trader's strategy from its arrays.
        A spec that is not yet in the side's mix joins it as a new population
        (with the compiled engine, only a strategy that has a compiled decision).
        """
        if isinstance(side, str):
            s = side_index(side)
        elif isinstance(side, int | np.integer) and not isinstance(side, bool | np.bool_):
            s = int(side)
        else:
            s = -1  # 0.5, True: no side
        if s not in (SELLER, BUYER):
            raise ValueError(f"side must be 0 (seller), 1 (buyer) or a side's name, got {side!r}")
        if isinstance(strategy, str) and strategy != strategy.strip():
            raise ValueError(f"strategy must be a spec without surrounding spaces, got "
                             f"{strategy!r}")
        book, names = self._books[s], self._names[s]
        traders = population.trader_indices(traders, len(book), "traders")
        added = isinstance(strategy, str) and strategy not in names
        if added:
            if like is not None:
                raise ValueError(f"like must name traders who play {strategy!r}; none does")
            population.add_strategy(s, names, self._strategies[s], strategy, self.params,
                                    self.protocol, self.rng,
                                    compiled_only=self.engine.name == "compiled")
        to = population.strategy_index(strategy, names)
        if like is not None:
            like = population.trader_indices(like, len(book), "like", distinct=False)
            if like.shape != traders.shape:
                raise ValueError(f"like must name one trader per mover ({traders.size}), "
                                 f"got {like.size}")
            if np.any(book.strategy[like] != to):
                raise ValueError(f"like must name traders who play {names[to]!r}")
        rows = None if like is None else book.member[like]
        grew = population.reassign(book, names, self._strategies[s], traders, to, rows,
                                   self.params, self.protocol, self.rng)
        if grew or added:
            self.engine.rebind(self._market)

    # --- the state a user inspects ---------------------------------------------------------
    @property
    def sellers(self) -> TraderArrays:
        return self._books[SELLER]

    @property
    def buyers(self) -> TraderArrays:
        return self._books[BUYER]

    def book(self, side: int) -> TraderArrays:
        return self._books[side]

    def strategy_names(self, side: int) -> list[str]:
        return self._names[side]

    def strategy_objects(self, side: int) -> list[Strategy]:
        """The population objects playing ``side``, in the order of :meth:`strategy_names`."""
        return self._strategies[side]

    @property
    def values(self) -> np.ndarray:
        """Buyers' current values (a copy), for demand curves."""
        return self.buyers.reservation.copy()

    @property
    def costs(self) -> np.ndarray:
        """Sellers' current costs (a copy), for supply curves."""
        return self.sellers.reservation.copy()

    @property
    def equilibrium(self) -> Equilibrium:
        """Competitive equilibrium of the current period's values and costs."""
        return self.ledger.equilibrium

    def team_wallets(self) -> np.ndarray:
        """Earnings pooled per team id.

        Cached per step: earnings only change inside :meth:`step`, and a view
        reading ``agent.wallet`` for every agent must not redo the sum each time.
        """
        if self._team_cache[0] != self.steps:
            self._team_cache = (self.steps, ledger.team_wallets(self._books, self.n_teams))
        return self._team_cache[1]

    def agent_columns(self) -> dict[str, np.ndarray]:
        """Agent-level state as columns (sellers first, then buyers), read from the arrays."""
        wallets = self.team_wallets() if self.common_wallet else None
        return agent_columns(self._books, self._name_arrays(), self._uid, wallets)

    def _name_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array(self._names[SELLER], dtype=object),
                np.array(self._names[BUYER], dtype=object))

    def agents_now(self) -> pd.DataFrame:
        """The live agent-level state, one row per trader (the collected history of it is
        :meth:`agent_frame`)."""
        return pd.DataFrame(self.agent_columns())

    # --- collected data ----------------------------------------------------------------------
    def agent_data_due(self) -> bool:
        """Whether the DataCollector should record agent variables at this collect."""
        return self._collect_agents_now

    def collect_agents(self) -> None:
        """Record agent variables now (whatever ``agent_data`` says)."""
        self.datacollector.collect_agents(self)

    def model_frame(self) -> pd.DataFrame:
        """One row per step: its trades, the period so far, earnings so far."""
        return self.datacollector.get_model_vars_dataframe()

    def periods_frame(self) -> pd.DataFrame:
        """One row per closed period: deals, prices, CE band, efficiency, surplus split."""
        return self.datacollector.get_table_dataframe("periods")

    def prices_frame(self) -> pd.DataFrame:
        """Transaction prices: per step, each price level that saw deals and how many."""
        return self.datacollector.get_table_dataframe("prices")

    def agent_frame(self) -> pd.DataFrame:
        """Collected agent variables, flat (Step, AgentID columns), the history of
        :meth:`agents_now`; empty if none collected."""
        if not self.datacollector.has_agent_records:
            return pd.DataFrame(columns=["Step", "AgentID", *AGENT_COLUMNS])
        return self.datacollector.get_agent_vars_dataframe().reset_index()

    def summary(self) -> dict[str, float]:
        """Flat summary of the run so far (all values floats; NaN where undefined)."""
        periods = self.period + (self.step_in_period > 0)
        return {"steps": float(self.steps), "periods": float(periods),
                **self.ledger.run_figures(), **self._earnings()}

    # --- the last step's negotiations ----------------------------------------------------------
    @property
    def last_pairs(self) -> int:
        return len(self._last)

    def pairs_frame(self) -> pd.DataFrame:
        """The last step's pairs: ids, strategies, first mover, rounds used, deal level, price."""
        return self._last.frame(self._uid, self._name_arrays(), self._books)

    def trace(self, pair: int = 0) -> PairTrace | None:
        """The negotiation record of pair ``pair`` of the last step (None if no pair met)."""
        return self._last.trace(pair, self.seller_agents, self.buyer_agents, self.grid)

    def trace_of(self, agent: Trader) -> PairTrace | None:
        """The last step's negotiation of ``agent``, None if it did not negotiate."""
        pair = self._last.pair_of(agent.side, agent.index)
        return None if pair is None else self.trace(pair)


def release_agent_ids(model: mesa.Model) -> None:
    """Drop Mesa's class-level reference to ``model`` once its agents are made.

    ``mesa.Agent._ids`` (a private dict of id counters keyed by model, in Mesa
    3.3.1) holds a strong reference to every model that ever made an agent,
    so a batch would keep every model it ran; this is the one place that
    reaches into it.
    """
    mesa.Agent._ids.pop(model, None)
