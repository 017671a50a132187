"""The marketplace: a Mesa model in which Sellers and Buyers pair up and bargain every step.

Each step, the traders who have not yet traded their unit this period are
paired at random (the longer side's extra traders wait), every pair runs the
alternating-offers protocol (:func:`market.game.protocol.negotiate`) with the two
traders' strategies, and deals settle wallets. A trading period lasts
``period`` steps (Gode and Sunder's markets: one unit per trader per
period); then everybody is back, with values and costs kept or redrawn.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.datacollection import DataCollector

import strategies
from market.game.grid import PriceGrid
from market.game.protocol import Side, negotiate
from market.game.record import BatchRecord, NegotiationRecord
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Protocol
from market.sim.agents import Buyer, Seller, Trader, TraderArrays
from market.sim.learners import MarketQLearning, default_learner_params, drawn_learner_params
from market.sim.metrics import Equilibrium, competitive_equilibrium, efficiency, surplus_split
from strategies import specs
from strategies.base import Strategy
from strategies.qlearning import QLearning

Distribution = str | Callable[[np.random.Generator, int, float, float], np.ndarray]
DISTRIBUTIONS = ("uniform", "normal", "triangular")
FIRST_MOVERS = ("random", "seller", "buyer")
AGENT_DATA = ("period", "step", "none")
#: one row per step and price level that saw deals: the transaction prices, compactly
PRICE_COLUMNS = ("step", "period", "level", "price", "deals")
AGENT_COLUMNS = ("side", "strategy", "reservation", "wallet", "earnings", "cash", "trades", "team")
PERIOD_COLUMNS = (
    "period",
    "last_step",
    "deals",
    "mean_price",
    "price_std",
    "ce_price_lo",
    "ce_price_hi",
    "ce_quantity",
    "max_surplus",
    "realised_surplus",
    "efficiency",
    "buyer_surplus",
    "seller_surplus",
    "buyer_share",
    "seller_share",
)


@dataclass
class PairTrace:
    """One negotiation of the last step: who met whom, and what was said (for the view)."""

    seller: Seller
    buyer: Buyer
    record: NegotiationRecord
    grid: PriceGrid

    @property
    def price(self) -> float | None:
        """The deal price in money, None without a deal."""
        level = self.record.deal_level
        return None if level is None else float(self.grid.price(level))

    def moves(self) -> list[dict[str, Any]]:
        """The moves as rows: move, side, action, level, price (money; NaN for reject)."""
        return [
            {
                "move": m.move,
                "side": m.side,
                "action": m.action,
                "level": m.level,
                "price": float(self.grid.price(m.level)) if m.level > 0 else math.nan,
            }
            for m in self.record.moves
        ]


class MarketCollector(DataCollector):
    """Mesa's DataCollector, with agent records taken only when due and read from arrays.

    Model variables are collected every step. Agent variables of 100,000
    traders every step would cost more than the step itself, so they are
    collected when the model says so (end of each period by default, every
    step, never, or on request through :meth:`MarketModel.collect_agents`),
    and built from the model's arrays in one pass instead of one Python
    call per agent and variable.
    """

    def collect(self, model: MarketModel) -> None:  # type: ignore[override]
        if model.agent_data_due():
            super().collect(model)
            return
        saved, self.agent_reporters = self.agent_reporters, {}
        try:
            super().collect(model)
        finally:
            self.agent_reporters = saved

    def collect_agents(self, model: MarketModel) -> None:
        """Record the agent variables now, at ``model.steps``."""
        self._agent_records[model.steps] = list(self._record_agents(model))

    def _record_agents(self, model: MarketModel):  # type: ignore[override]
        cols = model.agent_columns()
        step = np.full(len(cols["unique_id"]), model.steps)
        columns = (cols[k].tolist() for k in ("unique_id", *AGENT_COLUMNS))
        return zip(step.tolist(), *columns, strict=True)


class MarketModel(mesa.Model):
    """Many Sellers and Buyers bargaining in pairs with pluggable strategies.

    Parameters
    ----------
    n_buyers, n_sellers:
        traders on each side (at least 1 each).
    buyer_mix, seller_mix:
        strategy name -> share of the side (shares sum to 1), e.g.
        ``{"averaging": 0.5, "qlearning": 0.5}``; counts are the shares
        rounded by largest remainder, and who gets which strategy is drawn.
        A name may be ``"qlearning:FILE.npz"`` to start learners from a saved table.
    prices, rounds:
        the protocol's P levels over the traders' price range and T rounds.
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
        last step); see :mod:`market.sim.learners`.
    clock_buckets:
        time-left slots of a clocked learner's table (default ``min(period, 4)``).
    learner_params:
        ``"fixed"`` (the defaults of :func:`~market.sim.learners.default_learner_params`)
        or ``"drawn"`` (per agent, :func:`~market.sim.learners.drawn_learner_params`).
    rational_learners:
        learners only consider individually rational actions (default True).
    strategy_params:
        extra keyword arguments per strategy name, passed to its constructor.
    agent_data:
        when the DataCollector records agent variables: ``"period"``, ``"step"``, ``"none"``.
    seed, rng:
        Mesa's seeding; every random draw of the model uses ``self.rng``.
    """

    def __init__(
        self,
        n_buyers: int = 50,
        n_sellers: int = 50,
        buyer_mix: Mapping[str, float] | None = None,
        seller_mix: Mapping[str, float] | None = None,
        prices: int = 5,
        rounds: int = 5,
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
        clock_buckets: int | None = None,
        learner_params: str = "fixed",
        rational_learners: bool = True,
        strategy_params: Mapping[str, Mapping[str, Any]] | None = None,
        agent_data: str = "period",
        seed: int | None = None,
        rng: Any = None,
    ) -> None:
        super().__init__(seed=seed, rng=rng)
        buyer_mix = dict(buyer_mix or {"averaging": 1.0})
        seller_mix = dict(seller_mix or {"averaging": 1.0})
        _check(n_buyers, n_sellers, prices, rounds, period, value_range, cost_range,
               value_dist, cost_dist, first, teams, learner_params, agent_data)
        self.protocol = Protocol(int(prices), int(rounds))
        self.period_length = int(period)
        self.redraw = bool(redraw)
        self.value_range = (float(value_range[0]), float(value_range[1]))
        self.cost_range = (float(cost_range[0]), float(cost_range[1]))
        self.value_dist, self.cost_dist = value_dist, cost_dist
        self.first = first
        self.common_wallet = bool(common_wallet)
        self.clock = bool(clock)
        self.clock_buckets = int(clock_buckets or min(self.period_length, 4))
        self.learner_params = learner_params
        self.rational_learners = bool(rational_learners)
        self.agent_data = agent_data
        self.grid = PriceGrid(
            min(self.value_range[0], self.cost_range[0]),
            max(self.value_range[1], self.cost_range[1]),
            self.protocol.prices,
        )
        self.mixes = (check_mix("seller_mix", seller_mix), check_mix("buyer_mix", buyer_mix))
        params = {k: dict(v) for k, v in (strategy_params or {}).items()}

        # --- populations: arrays first, then the Mesa agents that view them ------
        self._names: tuple[list[str], list[str]] = ([], [])
        self._strategies: tuple[list[Strategy], list[Strategy]] = ([], [])
        books = []
        for side, n in ((SELLER, n_sellers), (BUYER, n_buyers)):
            labels, counts = self._assign(self.mixes[side], int(n))
            member = np.zeros(len(labels), dtype=np.int64)
            for g in range(len(counts)):
                idx = np.flatnonzero(labels == g)
                member[idx] = np.arange(idx.size)
            for spec, count in zip(self.mixes[side], counts, strict=True):
                self._names[side].append(spec)
                self._strategies[side].append(self._make(spec, side, count, params))
            books.append(
                TraderArrays(
                    side,
                    self._draw(side, len(labels)),
                    labels,
                    member,
                    np.zeros(len(labels), dtype=np.int64),
                )
            )
        self._books: tuple[TraderArrays, TraderArrays] = (books[0], books[1])
        self._assign_teams(teams)
        self.n_teams = int(max(self.sellers.team.max(), self.buyers.team.max()) + 1)
        self.team_size = np.bincount(
            np.concatenate([self.sellers.team, self.buyers.team]), minlength=self.n_teams
        )
        self.teams = teams
        self._team_cache: tuple[int, np.ndarray] = (-1, np.zeros(0))
        self._update_levels()

        self.seller_agents: list[Seller] = [Seller(self, i) for i in range(len(self.sellers))]
        self.buyer_agents: list[Buyer] = [Buyer(self, i) for i in range(len(self.buyers))]
        # Mesa's Agent._ids keeps a strong reference to every model that ever
        # made an agent; all our agents exist now, so release it (batch runs
        # would otherwise keep every finished model and its arrays alive).
        mesa.Agent._ids.pop(self, None)
        self._uid = (
            np.array([a.unique_id for a in self.seller_agents], dtype=np.int64),
            np.array([a.unique_id for a in self.buyer_agents], dtype=np.int64),
        )

        # --- period and run accumulators ------------------------------------------
        self.period = 0
        self.step_in_period = 0  # steps done in the current period
        self._last: tuple[np.ndarray, np.ndarray, BatchRecord | None, np.ndarray] = (
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            None,
            np.zeros(0),
        )
        self._run = dict(
            deals=0, price_sum=0.0, price_sq=0.0, realised=0.0, max_surplus=0.0,
            buyer=0.0, seller=0.0,
        )
        self._start_period()
        self._stats = self._step_stats(np.zeros(0), 0)
        self._collect_agents_now = agent_data == "step"

        # partials of a module-level function, not lambdas: the model stays picklable
        reporters: dict[str, Any] = {k: partial(_stat, key=k) for k in self._stats}
        self.datacollector = MarketCollector(
            model_reporters=reporters,
            agent_reporters={
                k: attrgetter(k if k != "side" else "side_name") for k in AGENT_COLUMNS
            },
            tables={"periods": list(PERIOD_COLUMNS), "prices": list(PRICE_COLUMNS)},
        )
        self.datacollector.collect(self)

    # --- construction helpers -----------------------------------------------------
    def _assign(self, mix: dict[str, float], n: int) -> tuple[np.ndarray, np.ndarray]:
        """Counts by largest remainder (deterministic), then who gets what (drawn)."""
        shares = np.array(list(mix.values()), dtype=float)
        raw = shares * n
        counts = np.floor(raw).astype(np.int64)
        short = n - int(counts.sum())
        if short > 0:
            order = np.argsort(-(raw - counts), kind="stable")
            counts[order[:short]] += 1
        labels = self.rng.permutation(np.repeat(np.arange(len(counts)), counts))
        return labels.astype(np.int64), counts

    def _make(self, text: str, side: int, count: int, params: dict[str, dict]) -> Strategy:
        spec = specs.parse(text)
        name, path = spec.name, spec.arg
        extra = dict(params.get(name, {}))
        if name != "qlearning":
            if count == 0:
                return strategies.make(name, side, 1, self.protocol, **extra)
            return strategies.make(name, side, count, self.protocol, **extra)
        n = max(count, 1)
        base = (
            drawn_learner_params(n, self.rng)
            if self.learner_params == "drawn"
            else default_learner_params(side)
        )
        base.update(extra)
        if path:
            base.setdefault("tables", QLearning.spec_params(path, side, self.protocol)["tables"])
        if not self.rational_learners and not self.clock:
            return strategies.make("qlearning", side, n, self.protocol, **base)
        return MarketQLearning(
            side,
            n,
            protocol=self.protocol,
            rational=self.rational_learners,
            buckets=self.clock_buckets if self.clock else 1,
            **base,
        )

    def _draw(self, side: int, n: int) -> np.ndarray:
        lo, hi = self.cost_range if side == SELLER else self.value_range
        dist = self.cost_dist if side == SELLER else self.value_dist
        if callable(dist):
            out = np.asarray(dist(self.rng, n, lo, hi), dtype=float)
            if out.shape != (n,):
                raise ValueError(f"a reservation-price distribution must return {n} numbers")
            return np.clip(out, lo, hi)
        if dist == "uniform":
            return self.rng.uniform(lo, hi, n)
        if dist == "normal":
            return np.clip(self.rng.normal((lo + hi) / 2, (hi - lo) / 6, n), lo, hi)
        return self.rng.triangular(lo, (lo + hi) / 2, hi, n)

    def _assign_teams(self, teams: int | None) -> None:
        ns, nb = len(self.sellers), len(self.buyers)
        if teams is None:
            self.sellers.team[:] = np.arange(ns)
            self.buyers.team[:] = ns + np.arange(nb)
            return
        k = int(teams)
        self.sellers.team[:] = self.rng.permutation(np.arange(ns) % k)
        self.buyers.team[:] = k + self.rng.permutation(np.arange(nb) % k)

    def _update_levels(self) -> None:
        """Acceptable levels from reservation prices: Seller price >= cost, Buyer price <= value."""
        P = self.protocol.prices
        s, b = self.sellers.reservation, self.buyers.reservation
        self._lo = (self.grid.level_at_least(s), np.ones(len(b), dtype=np.int64))
        self._hi = (np.full(len(s), P, dtype=np.int64), self.grid.level_at_most(b))

    # --- the state a user inspects ---------------------------------------------------
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
        return self._eq

    def team_wallets(self) -> np.ndarray:
        """Earnings pooled per team id.

        Cached per step: earnings only change inside :meth:`step`, and a view
        reading ``agent.wallet`` for every agent must not redo the sum each time.
        """
        if self._team_cache[0] != self.steps:
            w = np.concatenate([self.sellers.earnings, self.buyers.earnings])
            t = np.concatenate([self.sellers.team, self.buyers.team])
            self._team_cache = (self.steps, np.bincount(t, weights=w, minlength=self.n_teams))
        return self._team_cache[1]

    def agent_columns(self) -> dict[str, np.ndarray]:
        """Agent-level state as columns (sellers first, then buyers), read from the arrays."""
        s, b = self.sellers, self.buyers
        earnings = np.concatenate([s.earnings, b.earnings])
        team = np.concatenate([s.team, b.team])
        wallet = self.team_wallets()[team] if self.common_wallet else earnings
        names = self._name_arrays()
        return {
            "unique_id": np.concatenate(self._uid),
            "side": np.repeat(np.array(SIDE_NAMES, dtype=object), [len(s), len(b)]),
            "strategy": np.concatenate([names[SELLER][s.strategy], names[BUYER][b.strategy]]),
            "reservation": np.concatenate([s.reservation, b.reservation]),
            "wallet": wallet,
            "earnings": earnings,
            "cash": np.concatenate([s.cash, b.cash]),
            "trades": np.concatenate([s.trades, b.trades]),
            "team": team,
        }

    def _name_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.array(self._names[SELLER], dtype=object),
            np.array(self._names[BUYER], dtype=object),
        )

    def agents_frame(self) -> pd.DataFrame:
        """The current agent-level state as a DataFrame (one row per trader)."""
        return pd.DataFrame(self.agent_columns())

    # --- the last step's negotiations --------------------------------------------------
    @property
    def last_pairs(self) -> int:
        return len(self._last[0])

    def pairs_frame(self) -> pd.DataFrame:
        """The last step's pairs: ids, strategies, first mover, rounds used, deal level, price."""
        ps, pb, rec, price = self._last
        names = self._name_arrays()
        cols: dict[str, Any] = {
            "seller_id": self._uid[SELLER][ps],
            "buyer_id": self._uid[BUYER][pb],
            "seller_strategy": names[SELLER][self.sellers.strategy[ps]],
            "buyer_strategy": names[BUYER][self.buyers.strategy[pb]],
        }
        if rec is None:  # nobody met: same columns, no rows
            cols.update(first=np.zeros(0, dtype=object), rounds_used=np.zeros(0, dtype=np.int64),
                        level=np.zeros(0, dtype=np.int64), price=np.zeros(0))
            return pd.DataFrame(cols)
        cols.update(
            first=np.array(SIDE_NAMES, dtype=object)[rec.first.astype(np.intp)],
            rounds_used=rec.rounds_used,
            level=rec.level,
            price=price,
        )
        return pd.DataFrame(cols)

    def trace(self, pair: int = 0) -> PairTrace | None:
        """The negotiation record of pair ``pair`` of the last step (None if no pair met)."""
        ps, pb, rec, _ = self._last
        if rec is None or len(ps) == 0:
            return None
        if not 0 <= pair < len(ps):
            raise ValueError(f"pair must be in [0, {len(ps) - 1}] (got {pair})")
        return PairTrace(
            self.seller_agents[int(ps[pair])],
            self.buyer_agents[int(pb[pair])],
            rec.negotiation(pair),
            self.grid,
        )

    def trace_of(self, agent: Trader) -> PairTrace | None:
        """The last step's negotiation of ``agent``, None if it did not negotiate."""
        ps, pb, _, _ = self._last
        where = np.flatnonzero((ps if agent.side == SELLER else pb) == agent.index)
        return self.trace(int(where[0])) if where.size else None

    # --- dynamics ----------------------------------------------------------------------
    def _start_period(self) -> None:
        if self.period > 0:
            self.sellers.traded[:] = False
            self.buyers.traded[:] = False
            if self.redraw:
                self.sellers.reservation[:] = self._draw(SELLER, len(self.sellers))
                self.buyers.reservation[:] = self._draw(BUYER, len(self.buyers))
                self._update_levels()
        self._eq = competitive_equilibrium(self.buyers.reservation, self.sellers.reservation)
        self._per = dict(deals=0, price_sum=0.0, price_sq=0.0, realised=0.0, buyer=0.0,
                         seller=0.0)
        self._run["max_surplus"] += self._eq.max_surplus

    def step(self) -> None:
        """Pair the traders still holding their unit, negotiate, settle; close the period at K."""
        if self.step_in_period == self.period_length:
            self.period += 1
            self.step_in_period = 0
            self._start_period()
        S, B = self.sellers, self.buyers
        avail_s = np.flatnonzero(~S.traded)
        avail_b = np.flatnonzero(~B.traded)
        n = min(avail_s.size, avail_b.size)
        ps = self.rng.permutation(avail_s)[:n]
        pb = self.rng.permutation(avail_b)[:n]
        prices = np.zeros(0)
        rec = None
        if n > 0:
            if self.first == "random":
                first = self.rng.integers(0, 2, n)
            else:
                first = np.full(n, SELLER if self.first == "seller" else BUYER)
            time_left = (
                np.full(n, self.period_length - self.step_in_period, dtype=np.int64)
                if self.clock
                else None
            )
            rec = negotiate(
                self.protocol,
                Side(self._strategies[SELLER], S.strategy[ps], S.member[ps], self._lo[SELLER][ps],
                     self._hi[SELLER][ps]),
                Side(self._strategies[BUYER], B.strategy[pb], B.member[pb], self._lo[BUYER][pb],
                     self._hi[BUYER][pb]),
                first,
                self.rng,
                time_left,
            )
            prices = self._settle(ps, pb, rec, time_left)
        self._last = (ps, pb, rec, prices)
        self.step_in_period += 1
        self._stats = self._step_stats(prices, n)
        closing = self.step_in_period == self.period_length
        self._collect_agents_now = self.agent_data == "step" or (
            closing and self.agent_data == "period"
        )
        if closing:
            self._close_period()
        self.datacollector.collect(self)

    def _settle(
        self, ps: np.ndarray, pb: np.ndarray, rec: BatchRecord, time_left: np.ndarray | None
    ) -> np.ndarray:
        """Move money, count trades, hand learners their rewards; return prices (NaN: no deal)."""
        S, B = self.sellers, self.buyers
        deal = rec.level > 0
        price = np.where(deal, self.grid.price(np.maximum(rec.level, 1)), np.nan)
        ds, db, p = ps[deal], pb[deal], price[deal]
        gain_s = p - S.reservation[ds]
        gain_b = B.reservation[db] - p
        S.cash[ds] += p
        B.cash[db] -= p
        S.earnings[ds] += gain_s
        B.earnings[db] += gain_b
        S.trades[ds] += 1
        B.trades[db] += 1
        S.traded[ds] = True
        B.traded[db] = True
        self._per["deals"] += int(deal.sum())
        self._per["price_sum"] += float(p.sum())
        self._per["price_sq"] += float((p * p).sum())
        counts = np.bincount(rec.level[deal], minlength=self.protocol.prices + 1)
        for level in np.flatnonzero(counts):
            self.datacollector.add_table_row("prices", {
                "step": self.steps, "period": self.period, "level": int(level),
                "price": float(self.grid.price(int(level))), "deals": int(counts[level]),
            })
        self._per["seller"] += float(gain_s.sum())
        self._per["buyer"] += float(gain_b.sum())
        self._per["realised"] += float(gain_s.sum() + gain_b.sum())
        self._run["deals"] += int(deal.sum())
        self._run["price_sum"] += float(p.sum())
        self._run["price_sq"] += float((p * p).sum())
        self._run["seller"] += float(gain_s.sum())
        self._run["buyer"] += float(gain_b.sum())
        self._run["realised"] += float(gain_s.sum() + gain_b.sum())

        span = self.grid.hi - self.grid.lo
        reward = np.zeros((2, len(ps)))
        reward[SELLER, deal] = gain_s / span
        reward[BUYER, deal] = gain_b / span
        if self.common_wallet:
            teams = np.concatenate([S.team[ps], B.team[pb]])
            pooled = np.bincount(teams, weights=reward.ravel(), minlength=self.n_teams)
            share = pooled / np.maximum(self.team_size, 1)
            reward[SELLER] = share[S.team[ps]]
            reward[BUYER] = share[B.team[pb]]
        for side, idx in ((SELLER, ps), (BUYER, pb)):
            book = self._books[side]
            group = book.strategy[idx]
            for g, strat in enumerate(self._strategies[side]):
                if not strat.classifier.get("learns", False):
                    continue
                rows = np.flatnonzero(group == g)
                if rows.size == 0:
                    continue
                member = book.member[idx[rows]]
                strat.learn(rec, rows, member, reward[side, rows],
                            None if time_left is None else time_left[rows])
        return price

    def _step_stats(self, prices: np.ndarray, pairs: int) -> dict[str, float]:
        """Model variables of the step just made (and of the period so far)."""
        p = prices[np.isfinite(prices)] if prices.size else prices
        stats: dict[str, float] = {
            "step": float(self.steps),
            "period": float(self.period),
            "pairs": float(pairs),
            "deals": float(p.size),
            "mean_price": float(p.mean()) if p.size else math.nan,
            "min_price": float(p.min()) if p.size else math.nan,
            "max_price": float(p.max()) if p.size else math.nan,
            "price_std": float(p.std()) if p.size else math.nan,
            "period_deals": float(self._per["deals"]),
        }
        stats.update(self._period_so_far())
        stats["ce_quantity"] = float(stats["ce_quantity"])
        stats.update(self._earnings())
        return stats

    def _period_so_far(self) -> dict[str, float]:
        """Competitive yardsticks of the current period and what has been realised so far."""
        per = self._per
        buyer_share, seller_share = surplus_split(per["buyer"], per["seller"])
        return {
            "ce_price_lo": self._eq.price_lo,
            "ce_price_hi": self._eq.price_hi,
            "ce_quantity": self._eq.quantity,
            "max_surplus": self._eq.max_surplus,
            "realised_surplus": per["realised"],
            "efficiency": efficiency(per["realised"], self._eq.max_surplus),
            "buyer_surplus": per["buyer"],
            "seller_surplus": per["seller"],
            "buyer_share": buyer_share,
            "seller_share": seller_share,
        }

    def _earnings(self) -> dict[str, float]:
        """Mean earnings per trader of each strategy and side; each team's total (run so far)."""
        out = {}
        for side in (SELLER, BUYER):
            book = self._books[side]
            k = len(self._names[side])
            sums = np.bincount(book.strategy, weights=book.earnings, minlength=k)
            counts = np.bincount(book.strategy, minlength=k)
            for g, name in enumerate(self._names[side]):
                if counts[g]:
                    out[f"earnings.{SIDE_NAMES[side]}.{name}"] = float(sums[g] / counts[g])
            out[f"earnings.{SIDE_NAMES[side]}"] = float(book.earnings.mean())
        if self.teams is not None:
            wallets = self.team_wallets()
            for t in range(self.n_teams):
                side_name = "seller" if t < self.teams else "buyer"
                out[f"earnings.team.{side_name}.{t % self.teams}"] = float(wallets[t])
        return out

    def _close_period(self) -> None:
        per = self._per
        row = {
            "period": self.period,
            "last_step": self.steps,
            "deals": per["deals"],
            "mean_price": _mean(per["price_sum"], per["deals"]),
            "price_std": _std(per["price_sum"], per["price_sq"], per["deals"]),
        }
        row.update(self._period_so_far())
        self.datacollector.add_table_row("periods", row)

    # --- data ----------------------------------------------------------------------------
    def agent_data_due(self) -> bool:
        """Whether the DataCollector should record agent variables at this collect."""
        return self._collect_agents_now

    def collect_agents(self) -> None:
        """Record agent variables now (whatever ``agent_data`` says)."""
        self.datacollector.collect_agents(self)

    def model_frame(self) -> pd.DataFrame:
        return self.datacollector.get_model_vars_dataframe()

    def periods_frame(self) -> pd.DataFrame:
        """One row per closed period: deals, prices, CE band, efficiency, surplus split."""
        return self.datacollector.get_table_dataframe("periods")

    def prices_frame(self) -> pd.DataFrame:
        """Transaction prices: per step, each price level that saw deals and how many."""
        return self.datacollector.get_table_dataframe("prices")

    def agent_frame(self) -> pd.DataFrame:
        """Collected agent variables, flat (Step, AgentID columns); empty if none collected."""
        if not self.datacollector._agent_records:
            return pd.DataFrame(columns=["Step", "AgentID", *AGENT_COLUMNS])
        return self.datacollector.get_agent_vars_dataframe().reset_index()

    def summary(self) -> dict[str, float]:
        """Flat summary of the run so far (all values floats; NaN where undefined)."""
        run = self._run
        deals = run["deals"]
        buyer_share, seller_share = surplus_split(run["buyer"], run["seller"])
        out: dict[str, float] = {
            "steps": float(self.steps),
            "periods": float(self.period + (self.step_in_period > 0)),
            "deals": float(deals),
            "mean_price": _mean(run["price_sum"], deals),
            "price_std": _std(run["price_sum"], run["price_sq"], deals),
            "ce_price_lo": self._eq.price_lo,
            "ce_price_hi": self._eq.price_hi,
            "ce_quantity": float(self._eq.quantity),
            "efficiency": efficiency(run["realised"], run["max_surplus"]),
            "realised_surplus": run["realised"],
            "max_surplus": run["max_surplus"],
            "buyer_surplus": run["buyer"],
            "seller_surplus": run["seller"],
            "buyer_share": buyer_share,
            "seller_share": seller_share,
        }
        out.update(self._earnings())
        return out


def _mean(total: float, n: int) -> float:
    return total / n if n else math.nan


def _std(total: float, squares: float, n: int) -> float:
    """Population standard deviation from running sums (NaN without data)."""
    if not n:
        return math.nan
    mean = total / n
    return math.sqrt(max(squares / n - mean * mean, 0.0))


def _stat(model: MarketModel, key: str) -> float:
    """Model reporter: one variable of the step just made."""
    return model._stats[key]


# --- validation (messages name the parameter and the allowed range) ------------------

def _check(
    n_buyers: Any, n_sellers: Any, prices: Any, rounds: Any, period: Any, value_range: Any,
    cost_range: Any, value_dist: Any, cost_dist: Any, first: Any, teams: Any,
    learner_params: Any, agent_data: Any,
) -> None:
    """The scalar checks of :class:`MarketModel`, usable without building one."""
    _check_count("n_buyers", n_buyers)
    _check_count("n_sellers", n_sellers)
    _check_int("period", period, 1)
    _check_choice("first", first, FIRST_MOVERS)
    _check_choice("agent_data", agent_data, AGENT_DATA)
    _check_choice("learner_params", learner_params, ("fixed", "drawn"))
    for name, rng_ in (("value_range", value_range), ("cost_range", cost_range)):
        lo, hi = (float(x) for x in rng_)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"{name} must be two finite numbers lo < hi (got {rng_!r})")
    for name, dist in (("value_dist", value_dist), ("cost_dist", cost_dist)):
        if not callable(dist):
            _check_choice(name, dist, DISTRIBUTIONS)
    if teams is not None:
        _check_int("teams", teams, 1)
    Protocol(int(prices), int(rounds))


def check_parameters(**params: Any) -> None:
    """Validate :class:`MarketModel` keyword arguments without building a model.

    ``ValueError`` (naming the parameter and its range) for the first bad
    one. Batch runs call it for every grid point before starting any run.
    """
    import inspect

    bound = inspect.signature(MarketModel.__init__).bind(None, **params)
    bound.apply_defaults()
    a = bound.arguments
    _check(a["n_buyers"], a["n_sellers"], a["prices"], a["rounds"], a["period"],
           a["value_range"], a["cost_range"], a["value_dist"], a["cost_dist"], a["first"],
           a["teams"], a["learner_params"], a["agent_data"])
    check_mix("buyer_mix", dict(a["buyer_mix"] or {"averaging": 1.0}))
    check_mix("seller_mix", dict(a["seller_mix"] or {"averaging": 1.0}))


def _check_count(name: str, n: Any) -> None:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{name} must be an integer >= 1 (got {n!r}); a side cannot be empty")


def _check_int(name: str, n: Any, lo: int) -> None:
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < lo:
        raise ValueError(f"{name} must be an integer >= {lo} (got {n!r})")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)} (got {value!r})")


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
