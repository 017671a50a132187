"""Sellers and Buyers: Mesa agents whose state lives in the model's arrays.

A market step with 100,000 traders cannot afford one Python call per trader,
so the state of each side is a structure of arrays (:class:`TraderArrays`)
owned by the model and updated with numpy. The Mesa agents are views onto
one row of those arrays: ``agent.wallet`` or ``agent.reservation`` read the
array at the agent's index, so what a user inspects (in the Solara view, in
``model.agents``, in the DataCollector) is always the live state, never a
stale copy.

A trader reads its market through the narrow :class:`MarketState` (the
model's ``market``: its sides' arrays, the strategy names, the team
wallets), not the model class, so this module stands below the model and
the market's state (:mod:`market.sim.state`) and imports neither.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import mesa
import numpy as np

from market.game.rules import BUYER, SELLER, SIDE_NAMES

#: the agent variables, as the DataCollector records them and the model lays them out
AGENT_COLUMNS = ("side", "strategy", "reservation", "wallet", "earnings", "cash", "trades", "team")


@dataclass
class TraderArrays:
    """The state of one side of the market, one row per trader.

    ``reservation``: Seller cost or Buyer value (money); ``cash``: money
    received (Seller, positive) or paid (Buyer, negative); ``earnings``:
    surplus made (Seller ``price - cost``, Buyer ``value - price``);
    ``strategy``: index into the model's strategy names of this side;
    ``member``: index of the trader inside its strategy's population;
    ``team``: team id; ``trades``: units traded so far; ``traded``: whether the
    trader already traded its unit this period. ``joined``: the trader's earnings when it
    took up its current strategy, and ``banked``: what each strategy's traders earned under
    it before they left it (by strategy index), so that earnings count for the strategy
    that earned them (:meth:`earned_under`).
    """

    side: int
    reservation: np.ndarray
    strategy: np.ndarray
    member: np.ndarray
    team: np.ndarray
    cash: np.ndarray = field(init=False)
    earnings: np.ndarray = field(init=False)
    trades: np.ndarray = field(init=False)
    traded: np.ndarray = field(init=False)
    joined: np.ndarray = field(init=False)
    banked: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.reservation)
        self.cash = np.zeros(n)
        self.earnings = np.zeros(n)
        self.trades = np.zeros(n, dtype=np.int64)
        self.traded = np.zeros(n, dtype=bool)
        self.joined = np.zeros(n)
        self.banked = np.zeros(0)

    @property
    def moved(self) -> bool:
        """Whether any trader has changed strategy (else earnings are all under the first)."""
        return self.banked.size > 0

    def bank(self, traders: np.ndarray, n_strategies: int) -> None:
        """``traders`` leave their strategies: what they earned under them is banked there,
        and their earnings under the next count from now."""
        if self.banked.size < n_strategies:
            self.banked = np.concatenate([self.banked,
                                          np.zeros(n_strategies - self.banked.size)])
        np.add.at(self.banked, self.strategy[traders],
                  self.earnings[traders] - self.joined[traders])
        self.joined[traders] = self.earnings[traders]

    def under_current(self) -> np.ndarray:
        """Each trader's earnings under the strategy it plays now."""
        return self.earnings - self.joined if self.moved else self.earnings

    def earned_under(self, n_strategies: int) -> np.ndarray:
        """What each strategy's traders earned under it, the run so far: banked by those who
        left it, plus its current traders' earnings since they took it up."""
        out = np.bincount(self.strategy, weights=self.under_current(), minlength=n_strategies)
        out[:self.banked.size] += self.banked[:n_strategies]
        return out

    def kernel_arrays(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
        """This side's arrays as the compiled step takes them, with the acceptable levels
        (:data:`market.sim.kernel.SIDE_FIELDS`' order: one place to add a per-trader array)."""
        return (self.reservation, self.strategy, self.member, self.team, self.cash,
                self.earnings, self.trades, self.traded, lo, hi)

    @property
    def ledger_arrays(self) -> tuple[np.ndarray, ...]:
        """What settling a deal reads and changes: ``(reservation, cash, earnings, trades,
        traded)`` (:func:`market.sim.exchange.settle_deals`)."""
        return self.reservation, self.cash, self.earnings, self.trades, self.traded

    def __len__(self) -> int:
        return len(self.reservation)


def fixed_columns(books: Sequence[TraderArrays], uid: Sequence[np.ndarray]
                  ) -> dict[str, np.ndarray]:
    """The agent columns that never change in a market (ids, sides, teams), made once: every
    record of the agents' state shares them."""
    s, b = books[SELLER], books[BUYER]
    return {"unique_id": np.concatenate(uid),
            "side": np.repeat(np.array(SIDE_NAMES, dtype=object), [len(s), len(b)]),
            "team": np.concatenate([s.team, b.team])}


def agent_columns(books: Sequence[TraderArrays], names: Sequence[np.ndarray],
                  fixed: dict[str, np.ndarray], wallets: np.ndarray | None = None
                  ) -> dict[str, np.ndarray]:
    """Every trader's state as columns (Sellers first, then Buyers), read from the arrays.

    ``books`` and ``names`` (object arrays of strategy names) are indexed by
    side; ``fixed``: the market's :func:`fixed_columns`; ``wallets``: earnings
    per team id under a common wallet (None: each trader's wallet is its own
    earnings).
    """
    s, b = books[SELLER], books[BUYER]
    earnings = np.concatenate([s.earnings, b.earnings])
    return {
        "unique_id": fixed["unique_id"],
        "side": fixed["side"],
        "strategy": np.concatenate([names[SELLER][s.strategy], names[BUYER][b.strategy]]),
        "reservation": np.concatenate([s.reservation, b.reservation]),
        "wallet": earnings if wallets is None else wallets[fixed["team"]],
        "earnings": earnings,
        "cash": np.concatenate([s.cash, b.cash]),
        "trades": np.concatenate([s.trades, b.trades]),
        "team": fixed["team"],
    }


class MarketState(Protocol):
    """What a trader reads of its market (:class:`market.sim.state.Market`)."""

    books: Sequence[TraderArrays]
    names: Sequence[list[str]]
    common_wallet: bool

    def team_wallets(self) -> np.ndarray:
        """Earnings pooled per team id."""
        ...


class Trader(mesa.Agent):
    """A trader of one side; every attribute reads the market's arrays at ``index``.

    Its ``unique_id`` is its place in the market (Sellers first, from 1), the
    number Mesa's own counter would give it. It is set here rather than drawn
    from that counter because Mesa 3.3 keeps the counter in a class-level
    dict keyed by model, which would keep every model a batch ever built
    alive; the rest of ``mesa.Agent.__init__`` (the model, no position,
    registration with the model) is done the same.
    """

    side: int = SELLER

    def __init__(self, model: mesa.Model, index: int, unique_id: int) -> None:
        self.model = model
        self.unique_id = int(unique_id)
        self.pos = None
        self.index = int(index)
        model.register_agent(self)

    @property
    def _market(self) -> MarketState:
        return self.model.market  # type: ignore[attr-defined]

    @property
    def _arrays(self) -> TraderArrays:
        return self._market.books[self.side]

    @property
    def side_name(self) -> str:
        return SIDE_NAMES[self.side]

    @property
    def reservation(self) -> float:
        """Cost (Seller) or value (Buyer), in money."""
        return float(self._arrays.reservation[self.index])

    @property
    def strategy(self) -> str:
        return self._market.names[self.side][int(self._arrays.strategy[self.index])]

    @property
    def team(self) -> int:
        return int(self._arrays.team[self.index])

    @property
    def earnings(self) -> float:
        """Surplus this trader made itself (money)."""
        return float(self._arrays.earnings[self.index])

    @property
    def wallet(self) -> float:
        """Earnings, pooled over the team when the model has a common wallet."""
        if self._market.common_wallet:
            return float(self._market.team_wallets()[self.team])
        return self.earnings

    @property
    def cash(self) -> float:
        """Money received (Seller) or paid, negative (Buyer)."""
        return float(self._arrays.cash[self.index])

    @property
    def trades(self) -> int:
        return int(self._arrays.trades[self.index])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.unique_id}, {self.strategy}, "
            f"reservation={self.reservation:.2f}, wallet={self.wallet:.2f}, trades={self.trades})"
        )


class Seller(Trader):
    """Sells one unit per period at a price at least its ``cost``, if its strategy is rational."""

    side = SELLER

    @property
    def cost(self) -> float:
        return self.reservation


class Buyer(Trader):
    """Buys one unit per period at a price at most its ``value``, if its strategy is rational."""

    side = BUYER

    @property
    def value(self) -> float:
        return self.reservation


def make_agents(model: mesa.Model, uid: Sequence[Sequence[int]]) -> tuple[list[Seller],
                                                                         list[Buyer]]:
    """Both sides' agents (``uid``: each side's unique ids), registered with ``model``.

    Python's cyclic collector is paused meanwhile, as it was before if it was off: each
    agent and its entries in Mesa's agent sets are objects the collector tracks, so a
    million agents set off a dozen full collections, each walking every object made so
    far (2 s of a 5 s build at 500,000 + 500,000 traders); the agents are live, not
    garbage, so those walks found nothing.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        return ([Seller(model, i, u) for i, u in enumerate(uid[SELLER])],
                [Buyer(model, i, u) for i, u in enumerate(uid[BUYER])])
    finally:
        if was_on:
            gc.enable()
