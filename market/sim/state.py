"""The market's state, held once: both sides' arrays, who plays what, and the market's rules.

:class:`Market` is what an engine steps (:mod:`market.sim.engine`), what the
Mesa agents read (:mod:`market.sim.agents`), what revision and
``set_strategy`` change (:mod:`market.sim.revision`,
:mod:`market.sim.population`) and what the collector records
(:mod:`market.sim.collector`); the model (:class:`market.sim.model.MarketModel`)
holds one and keeps the schedule. Nothing else keeps a copy of these arrays.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from market.errors import Notice
from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER, Protocol
from market.sim import auction, exchange, institutions, ledger, population
from market.sim.agents import TraderArrays, agent_columns, fixed_columns
from market.sim.kernel import Rules
from market.sim.network import isolated_text
from market.sim.params import Params
from market.sim.partners import Partners
from market.sim.yardsticks import Equilibrium, competitive_equilibrium
from strategies.base import Strategy

#: the first mover's code in the compiled step, by the ``first`` parameter's value
OPENERS = {"random": exchange.OPEN_RANDOM, "seller": SELLER, "buyer": BUYER}


@dataclass
class Market:
    """Everything a market step reads and changes, by side (Sellers first).

    ``books``: each side's per-trader arrays; ``names`` and ``strategies``:
    each side's strategy specs and populations (``TraderArrays.strategy``
    indexes them); ``levels``: the acceptable price levels,
    ``((seller_lo, buyer_lo), (seller_hi, buyer_hi))``; ``team_size``:
    members per team id (empty without a common wallet); ``period_base``:
    each side's earnings when the period opened (what a period's payoff is
    measured from); ``switches``: strategy changes of the run so far.
    """

    params: Params
    grid: PriceGrid
    books: tuple[TraderArrays, TraderArrays]
    names: tuple[list[str], list[str]]
    strategies: tuple[list[Strategy], list[Strategy]]
    team_size: np.ndarray
    levels: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] = field(
        init=False)
    protocol: Protocol = field(init=False)
    open_mode: int = field(init=False)  # the first mover's code in the compiled step
    #: the compiled step's rules (:class:`~market.sim.kernel.Rules`), and as its entry points
    #: take them (:meth:`~market.sim.kernel.Rules.plain`, made once)
    rules: Rules = field(init=False)
    plain_rules: tuple = field(init=False, repr=False)
    #: members per team id when earnings are pooled (a common wallet), else empty
    pooled: np.ndarray = field(init=False)
    #: each side's agent ids: a trader's place in the market, Sellers first, from 1 (the
    #: numbers Mesa's own counter would give)
    uid: tuple[np.ndarray, np.ndarray] = field(init=False)
    period_base: tuple[np.ndarray, np.ndarray] = field(init=False)
    switches: list[int] = field(default_factory=lambda: [0, 0])
    #: how traders meet (:mod:`market.sim.institutions`)
    institution: institutions.Institution = field(init=False)
    #: the order book of an institution that holds one (:data:`market.sim.auction.BOOK_FIELDS`),
    #: None in bilateral bargaining
    book: tuple[np.ndarray, ...] | None = field(default=None, init=False)
    #: who bargains with whom, and what the Buyers remember of their Sellers
    #: (:mod:`market.sim.matching`)
    partners: Partners = field(init=False)
    _wallets: np.ndarray | None = field(default=None, init=False, repr=False)
    #: the agent columns that never change (:func:`~market.sim.agents.fixed_columns`)
    _fixed: dict[str, np.ndarray] | None = field(default=None, init=False, repr=False)
    #: the period's competitive equilibrium, found again only when values and costs are drawn
    equilibrium: Equilibrium = field(init=False)

    def __post_init__(self) -> None:
        self.protocol, self.open_mode = self.params.protocol, OPENERS[self.params.first]
        pr, g = self.protocol, self.grid
        self.rules = Rules(pr.prices, pr.rounds, self.open_mode, g.lo, g.step, self.span,
                           pr.pressure)
        self.plain_rules = self.rules.plain()
        self.pooled = (self.team_size if self.params.common_wallet
                       else np.zeros(0, dtype=np.int64))
        ns, nb = len(self.books[SELLER]), len(self.books[BUYER])
        self.uid = (np.arange(1, ns + 1, dtype=np.int64), np.arange(ns + 1, ns + nb + 1,
                                                                    dtype=np.int64))
        self.levels = population.acceptable_levels(self.grid, *self.books)
        self.period_base = (np.zeros(0), np.zeros(0))
        self.institution = institutions.get(self.params.institution)
        if self.institution.book:
            self.book = auction.new_book(max(ns, nb), pr.prices)
        p = self.params
        self.partners = Partners.build(p.matching, p.loyalty_beta, p.loyalty_gamma,
                                       p.loyalty_memory, p.service, ns, nb, p.graph)
        if p.graph is not None and p.graph.isolated_buyers + p.graph.isolated_sellers:
            warnings.warn(isolated_text(p.graph), Notice, stacklevel=2)

    def stepped(self) -> None:
        """Earnings may have changed (a step ran): what is derived from them is made again."""
        self._wallets = None

    @classmethod
    def build(cls, p: Params, rng: np.random.Generator) -> Market:
        """The traders of ``p`` with their strategies and teams, drawn from ``rng``."""
        lo, hi = min(p.value_range[0], p.cost_range[0]), max(p.value_range[1], p.cost_range[1])
        schedule = p.values_and_costs
        if schedule is not None:
            lo, hi = schedule.bounds
        books, names, strategies = population.populate(p, p.protocol, rng)
        team_size = population.assign_teams(*books, p.teams, rng)
        return cls(p, PriceGrid(lo, hi, p.prices), books, names, strategies, team_size)

    # --- the rules the engines read -----------------------------------------------------------
    @property
    def common_wallet(self) -> bool:
        return bool(self.params.common_wallet)

    @property
    def span(self) -> float:
        """The price range, the unit of rewards."""
        return self.grid.hi - self.grid.lo

    # --- the period ---------------------------------------------------------------------------
    def open_period(self, first: bool, rng: np.random.Generator) -> None:
        """Everybody holds a unit again (values and costs redrawn if asked, and the period's
        competitive equilibrium found again); the period's payoffs count from here; the
        book, if any, is empty."""
        if self.book is not None:
            auction.clear_book(self.book)
        if not first:
            exchange.hold_units(self.books[SELLER].traded, self.books[BUYER].traded)
            if self.params.redraw:
                for book in self.books:
                    book.reservation[:] = population.draw(self.params, book.side, len(book), rng)
                self.levels = population.acceptable_levels(self.grid, *self.books)
        if first or self.params.redraw:
            self.equilibrium = competitive_equilibrium(self.books[BUYER].reservation,
                                                       self.books[SELLER].reservation)
        self.partners.open_period(first, self.books[BUYER].earnings)
        if self.params.revision != "none":
            self.period_base = (self.books[SELLER].earnings.copy(),
                                self.books[BUYER].earnings.copy())

    def period_payoffs(self, side: int) -> np.ndarray:
        """Each trader's payoff in the period so far: its earnings since the period opened
        (its team's per member under a common wallet)."""
        own = self.books[side].earnings - self.period_base[side]
        if not self.common_wallet:
            return own
        teams = np.concatenate([b.team for b in self.books])
        gains = np.concatenate([b.earnings - base
                                for b, base in zip(self.books, self.period_base, strict=True)])
        pooled = np.bincount(teams, weights=gains, minlength=len(self.team_size))
        return (pooled / self.team_size)[self.books[side].team]

    def partner_figures(self) -> dict[str, float]:
        """The period's partner-choice figures (:func:`market.sim.partners.figures`; none under
        random pairs)."""
        if not self.partners.loyalty:
            return {}
        return self.partners.figures(self.books[BUYER].earnings, len(self.books[SELLER]))

    def best_quotes(self) -> tuple[int, int]:
        """The book's best bid and best ask levels (0: none; both 0 in bilateral bargaining):
        in a double auction the best standing quotes, in a call market the best the last
        call left unmatched."""
        if self.book is None or self.institution.quotes is None:
            return 0, 0
        return self.institution.quotes(self.book, self.protocol.prices)

    # --- what a person reads ------------------------------------------------------------------
    def team_wallets(self) -> np.ndarray:
        """Earnings pooled per team id (Sellers' teams first); summed once per step, since a
        view reads ``agent.wallet`` of every agent."""
        if self._wallets is None:
            self._wallets = ledger.team_wallets(self.books, len(self.team_size))
        return self._wallets

    def earnings(self) -> dict[str, float]:
        """Mean earnings of each strategy and side, each team's total (the run so far)."""
        wallets = None if self.params.teams is None else self.team_wallets()
        return ledger.earnings(ledger.earnings_sums(self.books, self.names), self.params.teams,
                               wallets)

    def name_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Each side's strategy names as an object array, for indexing by trader."""
        return (np.array(self.names[SELLER], dtype=object),
                np.array(self.names[BUYER], dtype=object))

    def agent_columns(self) -> dict[str, np.ndarray]:
        """Every trader's state as columns (Sellers first, then Buyers), read from the arrays:
        what the collector records."""
        wallets = self.team_wallets() if self.common_wallet else None
        if self._fixed is None:
            self._fixed = fixed_columns(self.books, self.uid)
        return agent_columns(self.books, self.name_arrays(), self._fixed, wallets)

    def agents_now(self) -> pd.DataFrame:
        """The live agent-level state, one row per trader (its collected history is
        ``model.datacollector.agent_frame()``)."""
        return pd.DataFrame(self.agent_columns())

    def counts(self, side: int) -> np.ndarray:
        """Traders per strategy of ``side``."""
        return np.bincount(self.books[side].strategy, minlength=len(self.names[side]))

    def strategy_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Both sides' strategy names, as plain tuples: what
        :func:`~market.sim.ledger.read_rows` reads a compiled call's rows with."""
        return tuple(self.names[SELLER]), tuple(self.names[BUYER])
