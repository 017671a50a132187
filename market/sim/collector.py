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
from collections.abc import Iterable
from functools import partial
from operator import attrgetter
from typing import Any, Protocol

import numpy as np
import pandas as pd
from mesa.datacollection import DataCollector

from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim import ledger
from market.sim.agents import AGENT_COLUMNS
from market.sim.state import Market

#: one row per step and price level that saw deals: the transaction prices, compactly
PRICE_COLUMNS = ("step", "period", "level", "price", "deals")
#: one row per period, side and strategy of the mix: who played it and what they earned
SHARE_COLUMNS = ("period", "last_step", "side", "strategy", "traders", "share",
                 "mean_earnings")


class Collected(Protocol):
    """What the collector reads of the model."""

    steps: int
    period: int
    variables: dict[str, float]
    agents_due: bool  # whether agent variables are due at this collect
    market: Market
    ledger: ledger.Ledger
    last_step: Any


def variables(model: Collected, trades: dict[str, float]) -> dict[str, float]:
    """The model variables of the step just made: its trades (``trades``), the period so far,
    the run so far, earnings; when traders revise, each strategy's share of its side and
    the strategy changes so far."""
    m = model.market
    out = ledger.step_figures(model.steps, model.period, len(model.last_step), trades,
                              model.ledger.period_figures())
    out.update(ledger.run_columns(model.ledger.run_figures()))
    out.update(m.earnings())
    if m.params.revision != "none":
        for side in (SELLER, BUYER):
            counts = m.counts(side).tolist()
            for name, c in zip(m.names[side], counts, strict=False):
                out[f"share.{SIDE_NAMES[side]}.{name}"] = c / len(m.books[side])
            out[f"switches.{SIDE_NAMES[side]}"] = m.switches[side]
    return out


def latest(model: Collected, key: str) -> float:
    """Model reporter: one variable of the step just made (a module-level function, not a
    lambda, so that the model stays picklable). NaN when the step has no such figure: a
    strategy whose last trader changed to another has no mean earnings."""
    return model.variables.get(key, math.nan)


class MarketCollector(DataCollector):
    """Collects ``variables`` (names of the model's per-step variables) and the agents' state."""

    def __init__(self, variables: Iterable[str], period_columns: Iterable[str]) -> None:
        self._variables = list(variables)
        super().__init__(
            model_reporters={k: partial(latest, key=k) for k in variables},
            agent_reporters={
                k: attrgetter(k if k != "side" else "side_name") for k in AGENT_COLUMNS
            },
            tables={"periods": ["period", "last_step", *period_columns],
                    "prices": list(PRICE_COLUMNS), "shares": list(SHARE_COLUMNS)},
        )
        #: the agents' recorded state: step -> one array per agent variable (our own store;
        #: Mesa's private ``_agent_records`` of per-agent tuples stays empty)
        self.recorded: dict[int, dict[str, np.ndarray]] = {}

    def collect(self, model: Collected) -> None:  # type: ignore[override]
        """What Mesa's ``collect`` does with these reporters, without its per-value cost.

        Each model reporter reads one float of ``model.variables``; Mesa would
        call each and deep-copy its value, which cost more than a compiled
        market step. Floats need no copy, so the values go straight into
        ``model_vars`` (the lists Mesa's frames are built from).
        """
        variables, model_vars = model.variables, self.model_vars
        for key in self._variables:
            model_vars[key].append(variables.get(key, math.nan))
        if model.agents_due:
            self.collect_agents(model)

    def collect_agents(self, model: Collected) -> None:
        """Record the agent variables now, at ``model.steps``: as columns, not rows.

        Mesa keeps one tuple of Python objects per agent and step; at a
        million traders that is gigabytes and most of a step. The columns
        (one array per variable) hold the same values at 8 bytes each.
        """
        self.recorded[model.steps] = model.market.agent_columns()

    @property
    def has_agent_records(self) -> bool:
        """Whether any agent variables were recorded."""
        return bool(self.recorded)

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
        """One ``prices`` row per level among ``levels`` (the deals' levels): how many deals."""
        counts = np.bincount(levels, minlength=grid.prices + 1)
        table = self.tables["prices"]  # straight into Mesa's columns: a row per level
        for level in np.flatnonzero(counts).tolist():
            table["step"].append(step)
            table["period"].append(period)
            table["level"].append(level)
            table["price"].append(grid.lo + (level - 1.0) * grid.step)
            table["deals"].append(int(counts[level]))

    def add_period(self, row: dict[str, Any]) -> None:
        """The row of a closed period."""
        self.add_table_row("periods", row)

    def add_shares(self, rows: Iterable[dict[str, Any]]) -> None:
        """The ``shares`` rows of a closed period (one per side and strategy of the mix)."""
        for row in rows:
            self.add_table_row("shares", row)
