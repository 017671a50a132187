"""Mesa's DataCollector for the market: agent records only when due, and read from arrays.

Model variables are collected every step. Agent variables of 100,000
traders every step would cost more than the step itself, so they are
collected when the model says so (end of each period by default, every
step, never, or on request), and built from the model's arrays in one pass
instead of one Python call per agent and variable. Two tables ride along:
``periods`` (one row per closed trading period) and ``prices`` (per step,
each price level that saw deals and how many), and, when traders revise,
``shares``. The frames a user reads are the collector's, as in any Mesa
model: ``get_model_vars_dataframe()``, ``get_table_dataframe("periods")``
(or ``"prices"``, ``"shares"``) and :meth:`MarketCollector.agent_frame`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd
from mesa.datacollection import DataCollector

from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim import ledger, revision
from market.sim.agents import AGENT_COLUMNS
from market.sim.state import Market
from market.sim.yardsticks import Equilibrium

#: one row per step and price level that saw deals: the transaction prices, compactly
PRICE_COLUMNS = ("step", "period", "level", "price", "deals")
#: one row per period, side and strategy of the mix: who played it and what they earned
SHARE_COLUMNS = ("period", "last_step", "side", "strategy", "traders", "share",
                 "mean_earnings")


class Collected(Protocol):
    """What the collector reads of the model."""

    steps: int
    period: int
    agents_due: bool  # whether agent variables are recorded at every collect (each step)
    market: Market
    ledger: ledger.Ledger
    last_step: Any


class Snapshot(NamedTuple):
    """What one step's model variables are made of, taken as the step ends.

    Taking it costs a few copies of running totals; making the forty-odd
    figures of a row from it costs more than a small market's compiled step,
    so rows are made only when the model table is read (a batch that keeps
    only each run's summary never makes them). ``trades``: the step's
    :func:`~market.sim.ledger.step_stats` (None: nobody met); the totals and
    the equilibrium are tuples of their fields; each side's earnings are
    :func:`~market.sim.ledger.earnings_sums`'s; each side's ``traders`` and
    ``switches`` (None when traders do not revise): per side, the traders per strategy
    and the strategy changes so far.

    Kept as a plain tuple of numbers, strings and arrays nested at most two
    deep (:func:`snapshot`), which Python's cyclic collector stops tracking
    at its next young collections. Kept as objects (or nested deeper: the
    collector untracks one level per pass), each step's snapshot reached the
    oldest generation, and the full collections that set off, each a walk of
    every object numba and Mesa hold (120 ms), cost a 50 + 50 market a tenth
    of its step time.
    """

    step: int
    period: int
    pairs: int
    trades: tuple | None
    period_totals: tuple
    run_totals: tuple
    equilibrium: tuple
    seller_names: tuple[str, ...]
    seller_sums: tuple[float, ...]
    seller_counts: tuple[float, ...]  # traders per strategy (whole numbers)
    seller_mean: float
    buyer_names: tuple[str, ...]
    buyer_sums: tuple[float, ...]
    buyer_counts: tuple[float, ...]
    buyer_mean: float
    teams: int | None
    wallets: np.ndarray | None
    seller_traders: np.ndarray | None
    seller_switches: int | None
    buyer_traders: np.ndarray | None
    buyer_switches: int | None


def snapshot(model: Collected, trades: tuple | None, pairs: int | None = None,
             earnings: tuple | None = None) -> tuple:
    """The step just made, as :func:`variables` will read it: a plain tuple in the order of
    :class:`Snapshot`'s fields. ``pairs`` and ``earnings`` (both sides'
    :func:`~market.sim.ledger.earnings_sums`) when the caller has them from a step it made
    among others in one compiled call, else read from the model as it stands."""
    m = model.market
    teams = m.params.teams
    sellers, buyers = ledger.earnings_sums(m.books, m.names) if earnings is None else earnings
    return _snapshot(model.steps, model.period,
                     len(model.last_step) if pairs is None else pairs, trades, model.ledger,
                     _equilibrium(model), (sellers, buyers),
                     (teams, None if teams is None else m.team_wallets()), _shares(m))


def _snapshot(step: int, period: int, pairs: int, trades: tuple | None, books: ledger.Ledger,
              eq: tuple, earnings: tuple, teams: tuple, shares: tuple) -> tuple:
    """A step's :class:`Snapshot`, as a plain tuple in its fields' order."""
    return (step, period, pairs, trades, books.period.values(), books.run.values(), eq,
            *earnings[0], *earnings[1], *teams, *shares)


def _equilibrium(model: Collected) -> tuple:
    eq = model.ledger.equilibrium
    return eq.quantity, eq.price_lo, eq.price_hi, eq.max_surplus


def _shares(m: Market) -> tuple:
    """A snapshot's last four fields: each side's traders per strategy and its strategy
    changes so far, when traders revise."""
    if m.params.revision == "none":
        return None, None, None, None
    return m.counts(SELLER), m.switches[SELLER], m.counts(BUYER), m.switches[BUYER]


#: the first field of a :meth:`MarketCollector.collect_steps` entry among the snapshots
_STEPS = "steps"


def _snapshots(kept: tuple) -> Iterator[tuple]:
    """The snapshots of an entry of :meth:`MarketCollector.collect_steps`: each step's, as
    :func:`snapshot` took it on the step's own (the books entered step by step again)."""
    _, first, period, rows, names_s, names_b, period_totals, run_totals, eq, *shares = kept
    books = ledger.Ledger(period_totals, run_totals)
    for j, (pairs, sums, sellers, buyers) in enumerate(ledger.read_rows(rows,
                                                                        (names_s, names_b))):
        trades = None if sums is None else books.enter(sums)
        yield _snapshot(first + j, period, pairs, trades, books, eq, (sellers, buyers),
                        (None, None), tuple(shares))


def variables(row: tuple) -> dict[str, float]:
    """The model variables of a step (``row``: its :func:`snapshot`): its trades, the period
    so far, the run so far, earnings; when traders revise, each strategy's share of its side
    and the strategy changes so far."""
    s = Snapshot(*row)
    eq = Equilibrium(*s.equilibrium)
    so_far = ledger.figures(ledger.Totals(*s.period_totals), eq)
    out = ledger.step_figures(s.step, s.period, s.pairs, ledger.trades_of(s.trades), so_far)
    out.update(ledger.run_columns(ledger.run_figures(ledger.Totals(*s.run_totals), eq)))
    sides = ((s.seller_names, s.seller_sums, s.seller_counts, s.seller_mean),
             (s.buyer_names, s.buyer_sums, s.buyer_counts, s.buyer_mean))
    out.update(ledger.earnings(sides, s.teams, s.wallets))
    if s.seller_traders is None or s.buyer_traders is None:
        return out
    for side, counts, switches in ((SELLER, s.seller_traders, s.seller_switches),
                                   (BUYER, s.buyer_traders, s.buyer_switches)):
        size = counts.sum()
        for name, c in zip(sides[side][0], counts.tolist(), strict=False):
            out[f"share.{SIDE_NAMES[side]}.{name}"] = c / size
        out[f"switches.{SIDE_NAMES[side]}"] = switches
    return out


class _AgentRecords(Mapping[int, list[tuple[Any, ...]]]):
    """The recorded agent columns, read as Mesa's ``_agent_records`` (one tuple per agent)."""

    def __init__(self, recorded: dict[int, dict[str, np.ndarray]]) -> None:
        self._recorded = recorded

    def __getitem__(self, step: int) -> list[tuple[Any, ...]]:
        columns = self._recorded[step]
        values = [columns[k].tolist() for k in ("unique_id", *AGENT_COLUMNS)]
        return [(step, *row) for row in zip(*values, strict=True)]

    def __iter__(self) -> Iterator[int]:
        return iter(self._recorded)

    def __len__(self) -> int:
        return len(self._recorded)


def latest(model: Collected, key: str) -> float:
    """Model reporter: one variable of the model as it stands (a module-level function, not a
    lambda, so that the model stays picklable). NaN when there is no such figure: a
    strategy whose last trader changed to another has no mean earnings. The collector
    itself makes its rows from :class:`Snapshot` s."""
    return variables(snapshot(model, None)).get(key, math.nan)


class MarketCollector(DataCollector):
    """Collects ``variables`` (names of the model's per-step variables) and the agents' state."""

    def __init__(self, variables: Iterable[str], period_columns: Iterable[str]) -> None:
        self._variables = list(variables)
        self._snapshots: list[tuple] = []  # steps whose rows are not made yet (Snapshot)
        #: likewise, the steps' deal levels: (first step, period, levels, where each step's
        #: begin and the last ends, lowest price, price step, prices), no object the cyclic
        #: collector would track (see Snapshot)
        self._prices: list[tuple[int, int, np.ndarray, tuple, float, float, int]] = []
        super().__init__(
            model_reporters={k: partial(latest, key=k) for k in self._variables},
            agent_reporters={
                k: attrgetter(k if k != "side" else "side_name") for k in AGENT_COLUMNS
            },
            tables={"periods": ["period", "last_step", *period_columns],
                    "prices": list(PRICE_COLUMNS), "shares": list(SHARE_COLUMNS)},
        )
        #: the agents' recorded state: step -> one array per agent variable (our own store;
        #: Mesa's private ``_agent_records`` of per-agent tuples stays empty)
        self.recorded: dict[int, dict[str, np.ndarray]] = {}

    def collect(self, model: Collected, trades: tuple | None = None,  # type: ignore[override]
                pairs: int | None = None, earnings: tuple | None = None) -> None:
        """What Mesa's ``collect`` does with these reporters, without its per-value cost.

        Mesa would call each model reporter and deep-copy its value, which
        cost more than a compiled market step; here the step is kept as a
        :class:`Snapshot` (``trades``: its :func:`~market.sim.ledger.step_stats`;
        ``pairs`` and ``earnings`` as :func:`snapshot` takes them), and its row
        of ``model_vars`` is made when ``model_vars`` is next read.
        """
        self._snapshots.append(snapshot(model, trades, pairs, earnings))
        if model.agents_due:
            self.collect_agents(model)

    def collect_steps(self, model: Collected, first: int, rows: np.ndarray, levels: np.ndarray,
                      offsets: np.ndarray, names: tuple) -> None:
        """Steps made in one compiled call (agent data, if due at a period's end, is recorded by
        :meth:`close_period`): kept as the call wrote them (``rows``: one per step; ``levels``: the
        deals' levels, step ``j``'s from ``offsets[j]``), with the books as they stood before them.
        Their rows are made when read, as if collected one by one (a batch that keeps only each
        run's summary never makes them: they cost a small market a quarter of its step); ``first``:
        the first one's number; ``names``: each side's strategies during the call."""
        m = model.market
        self._snapshots.append((_STEPS, first, model.period, rows, *names,  # kept flat
                                model.ledger.period.values(),
                                model.ledger.run.values(), _equilibrium(model), *_shares(m)))
        grid = m.grid
        self._prices.append((first, model.period, levels, tuple(offsets.tolist()), grid.lo,
                             grid.step, grid.prices))

    @property
    def model_vars(self) -> dict[str, list[Any]]:
        """Mesa's lists of each variable's values, one per step (what its frames and
        ``batch_run`` read), made up to date from the steps collected since the last read."""
        if self._snapshots:
            pending, self._snapshots = self._snapshots, []
            columns = self._model_vars
            for kept in pending:  # (==: a pickled model's marker is an equal string)
                for snap in _snapshots(kept) if kept[0] == _STEPS else (kept,):
                    row = variables(snap)
                    for key in self._variables:
                        columns[key].append(row.get(key, math.nan))
        return self._model_vars

    @model_vars.setter
    def model_vars(self, value: dict[str, list[Any]]) -> None:
        self._model_vars = value

    @property
    def tables(self) -> dict[str, dict[str, list[Any]]]:
        """Mesa's tables (``periods``, ``prices``, ``shares``), the prices rows made up to
        date first."""
        for first, period, levels, offsets, lo, width, prices in self._prices:
            table = self._tables["prices"]  # straight into Mesa's columns: a row per level
            for j in range(len(offsets) - 1):
                counts = np.bincount(levels[offsets[j]:offsets[j + 1]], minlength=prices + 1)
                for level in np.flatnonzero(counts).tolist():
                    table["step"].append(first + j)
                    table["period"].append(period)
                    table["level"].append(level)
                    table["price"].append(lo + (level - 1.0) * width)
                    table["deals"].append(int(counts[level]))
        self._prices = []
        return self._tables

    @tables.setter
    def tables(self, value: dict[str, dict[str, list[Any]]]) -> None:
        self._tables = value

    def collect_agents(self, model: Collected) -> None:
        """Record the agent variables now, at ``model.steps``: as columns, not rows.

        Mesa keeps one tuple of Python objects per agent and step; at a
        million traders that is gigabytes and most of a step. The columns
        (one array per variable) hold the same values at 8 bytes each.
        """
        self.recorded[model.steps] = model.market.agent_columns()

    @property
    def _agent_records(self) -> Mapping[int, list[tuple[Any, ...]]]:
        """Mesa's per-step agent records, ``(step, AgentID, *values)`` per agent, as Mesa's
        ``batch_run`` reads them: made from the recorded columns when read."""
        return _AgentRecords(self.recorded)

    @_agent_records.setter
    def _agent_records(self, value: Any) -> None:
        """Mesa's ``__init__`` sets an empty dict; the records are :attr:`recorded`."""

    def get_agent_vars_dataframe(self) -> pd.DataFrame:
        """Mesa's agent table (index ``Step``, ``AgentID``), built from the recorded columns."""
        names = ["Step", "AgentID", *AGENT_COLUMNS]
        if not self.recorded:
            return pd.DataFrame(columns=names).set_index(["Step", "AgentID"])
        records = list(self.recorded.items())
        data = {"Step": np.concatenate([np.full(len(c["unique_id"]), s, dtype=np.int64)
                                        for s, c in records]),
                "AgentID": np.concatenate([c["unique_id"] for _, c in records])}
        for k in AGENT_COLUMNS:
            data[k] = np.concatenate([c[k] for _, c in records])
        return pd.DataFrame(data).set_index(["Step", "AgentID"])

    def agent_frame(self) -> pd.DataFrame:
        """The recorded agent variables, flat (``Step`` and ``AgentID`` columns): the history
        of ``model.market.agents_now()``; empty if none was recorded."""
        if not self.recorded:
            return pd.DataFrame(columns=["Step", "AgentID", *AGENT_COLUMNS])
        return self.get_agent_vars_dataframe().reset_index()

    def frames(self) -> dict[str, pd.DataFrame]:
        """Every frame the market records, by name: ``model`` (one row per step),
        ``periods``, ``prices``, ``shares`` and ``agents`` (:meth:`agent_frame`)."""
        return {"model": self.get_model_vars_dataframe(),
                **{name: self.get_table_dataframe(name) for name in self.tables},
                "agents": self.agent_frame()}

    def add_prices(self, step: int, period: int, levels: np.ndarray, grid: PriceGrid) -> None:
        """The ``prices`` rows of a step, one per level among ``levels`` (the deals' levels)
        with how many deals (made when the table is read)."""
        self._prices.append((step, period, levels, (0, len(levels)), grid.lo, grid.step,
                             grid.prices))

    def close_period(self, model: Collected) -> None:
        """A period closed: its row (partner choice's figures too, under it), its shares (when
        traders revise) and the agents' state (when it is recorded at each period's end)."""
        p = model.market.params
        self.add_period({"period": model.period, "last_step": model.steps,
                         **model.ledger.period_figures(), **model.market.partner_figures()})
        if p.revision != "none":
            self.add_shares(revision.share_rows(model.market, model.period, model.steps))
        if p.agent_data == "period":
            self.collect_agents(model)

    def add_period(self, row: dict[str, Any]) -> None:
        """The row of a closed period."""
        self._add_row("periods", row)

    def add_shares(self, rows: Iterable[dict[str, Any]]) -> None:
        """The ``shares`` rows of a closed period (one per side and strategy of the mix)."""
        for row in rows:
            self._add_row("shares", row)

    def _add_row(self, name: str, row: dict[str, Any]) -> None:
        """Mesa's ``add_table_row``, without making the pending prices rows first."""
        for column, values in self._tables[name].items():
            values.append(row[column])
