"""The market's books: running totals of the trading period and of the run, and their figures.

Every settled step is entered once (:meth:`Ledger.enter`, its :func:`settle_sums`) into two
:class:`Totals` of the same kind, the period's and the run's: deals, the
sum and the sum of squares of prices, the realised surplus and each side's
part of it, and the maximum surplus the competitive equilibrium offered.
One function, :func:`figures`, turns totals (and the current period's
:class:`~market.sim.yardsticks.Equilibrium`) into the market's figures,
:data:`METRICS`, in one order. They feed:

- the model's per-step variables (Mesa's DataCollector: the period so far),
- the periods table (one row per closed period),
- :meth:`market.sim.model.MarketModel.summary` (the
  run so far), hence ``run.py market --json``, its ``summary.json``, and
  every row of the ``run.py batch`` results table,
- ``run.py plot`` (metrics with ``plot``) and the printed summary table of
  ``run.py market`` (metrics with ``show``).

Earnings per strategy, side and team come from :func:`earnings`, for the
per-step variables and the summary alike.

How to add a market metric
--------------------------
1. If it is made of the totals kept here and the period's equilibrium,
   append one :class:`Metric` to :data:`METRICS`, e.g.::

       Metric("surplus_per_deal", lambda t, eq: _mean(t.realised, t.deals),
              "realised surplus per deal", show=True, plot=3),

   and that is all: it appears in the DataCollector's model variables,
   the periods table, ``summary()``, ``run.py market --json`` (and its
   printed table, with ``show=True``), the batch table and, with
   ``plot=N``, as the N-th panel of ``run.py plot``'s figure per swept
   parameter.
2. If it needs a running sum not kept yet, add a field to :class:`Totals`,
   compute the step's sum in :func:`settle_sums` (the one compiled function
   every engine and institution calls where a step settles: the deal
   prices, both sides' gains, the deals' costs and values, the period's
   competitive price) and add it in :meth:`Totals.enter`.
3. Only if it needs data a settled step does not carry, pass it to
   :func:`settle_sums` where the steps settle (:mod:`market.sim.kernel`,
   :mod:`market.sim.auction` and, for the lockstep path,
   :mod:`market.sim.engine`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from market.compiled.jit import njit
from market.game.buffers import floats, ints
from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim.yardsticks import Equilibrium, efficiency, surplus_split

if TYPE_CHECKING:  # for annotations only: the plots read the metrics without loading Mesa
    from market.sim.agents import TraderArrays


@dataclass(slots=True)
class Totals:
    """Running totals over some steps (a trading period, or the whole run)."""

    deals: int = 0
    price_sum: float = 0.0
    price_sq: float = 0.0
    realised: float = 0.0
    buyer: float = 0.0
    seller: float = 0.0
    max_surplus: float = 0.0
    #: the sum of squared distances of the prices from their period's competitive price
    deviation_sq: float = 0.0
    #: deals made by a trader the competitive equilibrium leaves out (a Buyer whose value
    #: is below the competitive price, or a Seller whose cost is above it)
    extramarginal: int = 0

    def values(self) -> tuple[int, float, float, float, float, float, float, float, int]:
        """The totals as they stand, a plain tuple in the fields' order (``Totals(*t)``
        makes them again)."""
        return (self.deals, self.price_sum, self.price_sq, self.realised, self.buyer,
                self.seller, self.max_surplus, self.deviation_sq, self.extramarginal)

    def enter(self, sums: tuple) -> None:
        """Enter one step's :func:`settle_sums` (read from its tuple: a step's entry is on
        every step's path)."""
        deals, price_sum, price_sq, _, _, _, seller, buyer, deviation_sq, extramarginal = sums
        self.deals += int(deals)
        self.price_sum += price_sum
        self.price_sq += price_sq
        self.seller += seller
        self.buyer += buyer
        self.realised += seller + buyer
        self.deviation_sq += deviation_sq
        self.extramarginal += int(extramarginal)


@njit(cache=True)
def settle_sums(prices: np.ndarray, seller_gain: np.ndarray, buyer_gain: np.ndarray,
                costs: np.ndarray, values: np.ndarray, centre: float) -> tuple:
    """Everything the ledger keeps of a settled step, in one call: its :func:`step_stats`,
    then its :func:`margins` about ``centre`` (the period's competitive price). The compiled
    step computes it in place (one call less per step, no gathers in Python); the
    lockstep path calls it from Python: the same sums either way."""
    n, total, squares, lo, hi, std, seller, buyer = step_stats(prices, seller_gain, buyer_gain)
    deviation_sq, extramarginal = margins(prices, costs, values, centre)
    return n, total, squares, lo, hi, std, seller, buyer, deviation_sq, extramarginal


@njit(cache=True)
def margins(prices: np.ndarray, costs: np.ndarray, values: np.ndarray, centre: float
            ) -> tuple[float, int]:
    """Of a step's deals (``prices``: NaN where a pair did not deal; ``costs`` and ``values``
    one per deal): the sum of squared distances of their prices from ``centre``, and how
    many were made by a trader outside the competitive equilibrium at ``centre`` (none
    without one: ``centre`` NaN)."""
    if not np.isfinite(centre):
        return 0.0, 0
    deviation_sq, extra, j = 0.0, 0, 0
    for p in prices:
        if not np.isfinite(p):
            continue
        deviation_sq += (p - centre) * (p - centre)
        extra += values[j] < centre or costs[j] > centre
        j += 1
    return deviation_sq, extra


# The sums below are compiled loops rather than numpy reductions: a market step calls them on
# a few dozen numbers, where numpy's call costs more than the sum, and a loop adds in one
# fixed order (numpy's pairwise sum may not), so every path gets the same last bit.
@njit(cache=True)
def step_stats(prices: np.ndarray, seller_gain: np.ndarray, buyer_gain: np.ndarray
               ) -> tuple[int, float, float, float, float, float, float, float]:
    """One step in one call: :func:`price_stats` of its ``prices``, then the sums of the
    deals' gains (Sellers', Buyers')."""
    n, total, squares, lo, hi, std = price_stats(prices)
    seller, buyer = 0.0, 0.0
    for v in seller_gain:
        seller += v
    for v in buyer_gain:
        buyer += v
    return n, total, squares, lo, hi, std, seller, buyer


@njit(cache=True)
def price_stats(prices: np.ndarray) -> tuple[int, float, float, float, float, float]:
    """Of the finite ``prices`` (NaN: no deal): count, sum, sum of squares, min, max, and the
    population standard deviation (NaN without any)."""
    n, total, squares = 0, 0.0, 0.0
    lo, hi = np.inf, -np.inf
    for p in prices:
        if np.isfinite(p):
            n += 1
            total += p
            squares += p * p
            lo, hi = min(lo, p), max(hi, p)
    if n == 0:
        return 0, 0.0, 0.0, np.nan, np.nan, np.nan
    mean = total / n
    spread = 0.0
    for p in prices:
        if np.isfinite(p):
            spread += (p - mean) * (p - mean)
    return n, total, squares, lo, hi, np.sqrt(spread / n)


@njit(cache=True)
def group_means(group: np.ndarray, values: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray, float]:
    """Per group ``0..k-1``: the sum and count of ``values``; and the mean of all of them."""
    sums, counts = np.zeros(k), np.zeros(k, dtype=np.int64)
    total = 0.0
    for i in range(values.size):
        sums[group[i]] += values[i]
        counts[group[i]] += 1
        total += values[i]
    return sums, counts, total / values.size if values.size else np.nan


class Ledger:
    """The period's and the run's totals, kept by the same entries (from these totals'
    :meth:`Totals.values`, if given)."""

    def __init__(self, period: tuple = (), run: tuple = ()) -> None:
        self.run = Totals(*run)
        self.period = Totals(*period)
        self.equilibrium = Equilibrium(0, math.nan, math.nan, 0.0)

    def open_period(self, equilibrium: Equilibrium) -> None:
        """A new trading period: fresh period totals, and what it can yield at most."""
        self.equilibrium = equilibrium
        self.period = Totals(max_surplus=equilibrium.max_surplus)
        self.run.max_surplus += equilibrium.max_surplus

    def enter(self, sums: tuple) -> tuple:
        """Enter a step's :func:`settle_sums` (about this period's competitive price); returns
        its :func:`step_stats`."""
        self.period.enter(sums)
        self.run.enter(sums)
        return sums[:8]

    def enter_rows(self, rows: np.ndarray) -> None:
        """Enter the steps of a compiled call's rows (:func:`read_rows`), one by one."""
        for row in rows[:, :ROW_SUMS].tolist():
            if row[0]:  # some pairs met: the row's sums follow (Totals.enter reads their
                self.enter(row[1:])  # counts as integers)

    def period_figures(self) -> dict[str, float]:
        """The figures of the current period so far (counts stay integers)."""
        return figures(self.period, self.equilibrium)

    def run_figures(self) -> dict[str, float]:
        """The figures of the run so far, all floats, in the summary's order."""
        return run_figures(self.run, self.equilibrium)


def run_figures(run: Totals, equilibrium: Equilibrium) -> dict[str, float]:
    """The figures of a run's totals, all floats, in the summary's order."""
    out = figures(run, equilibrium)
    order = [*SUMMARY_ORDER, *(k for k in out if k not in SUMMARY_ORDER)]
    return {k: float(out[k]) for k in order}


# --- the figures -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    """One market figure, made of running totals and the current period's equilibrium.

    ``label``: what it is, in words (figure axes, printed tables). ``show``:
    it belongs in ``run.py market``'s printed summary. ``plot``: its panel's
    position in ``run.py plot``'s figure per swept parameter (0: no panel).
    """

    key: str
    value: Callable[[Totals, Equilibrium], float]
    label: str = ""
    show: bool = False
    plot: int = 0


def _mean(total: float, n: int) -> float:
    return total / n if n else math.nan


def _std(total: float, squares: float, n: int) -> float:
    """Population standard deviation from running sums (NaN without data)."""
    if not n:
        return math.nan
    mean = total / n
    return math.sqrt(max(squares / n - mean * mean, 0.0))


def _rms(squares: float, n: int) -> float:
    return math.sqrt(squares / n) if n else math.nan


def _alpha(squares: float, n: int, centre: float) -> float:
    """Smith's (1962) coefficient of convergence, 100 sqrt(mean (p - p*)^2) / p* (NaN
    without deals or a positive competitive price). Each price is measured from its own
    period's p*; the divisor is the current period's, so a run whose values are redrawn
    reads it as an approximation (its ``price_rmsd`` is exact)."""
    return 100.0 * _rms(squares, n) / centre if n and centre > 0 else math.nan


#: the market's figures, in the order of the periods table and the per-step variables
METRICS: list[Metric] = [
    Metric("deals", lambda t, eq: t.deals, "deals", show=True),
    Metric("mean_price", lambda t, eq: _mean(t.price_sum, t.deals), "mean transaction price",
           show=True, plot=2),
    Metric("price_std", lambda t, eq: _std(t.price_sum, t.price_sq, t.deals),
           "standard deviation of transaction prices", show=True),
    Metric("ce_price_lo", lambda t, eq: eq.price_lo, "competitive price band, low end",
           show=True),
    Metric("ce_price_hi", lambda t, eq: eq.price_hi, "competitive price band, high end",
           show=True),
    Metric("ce_quantity", lambda t, eq: eq.quantity, "competitive quantity per period",
           show=True),
    Metric("max_surplus", lambda t, eq: t.max_surplus, "maximum surplus"),
    Metric("realised_surplus", lambda t, eq: t.realised, "realised surplus"),
    Metric("efficiency", lambda t, eq: efficiency(t.realised, t.max_surplus),
           "allocative efficiency", show=True, plot=1),
    Metric("price_rmsd", lambda t, eq: _rms(t.deviation_sq, t.deals),
           "root mean squared distance of prices from the competitive price"),
    Metric("alpha", lambda t, eq: _alpha(t.deviation_sq, t.deals, eq.price_mid),
           "Smith's alpha (%)", show=True),
    Metric("extramarginal", lambda t, eq: t.extramarginal,
           "extramarginal deals", show=True),
    Metric("buyer_surplus", lambda t, eq: t.buyer, "Buyers' surplus"),
    Metric("seller_surplus", lambda t, eq: t.seller, "Sellers' surplus"),
    Metric("buyer_share", lambda t, eq: surplus_split(t.buyer, t.seller)[0],
           "Buyers' share of the surplus", show=True),
    Metric("seller_share", lambda t, eq: surplus_split(t.buyer, t.seller)[1],
           "Sellers' share of the surplus", show=True),
]

#: ``summary()`` lists these first, in this order (efficiency before the surpluses it is
#: made of), then every other figure in the order of :data:`METRICS`
SUMMARY_ORDER = ("deals", "mean_price", "price_std", "ce_price_lo", "ce_price_hi",
                 "ce_quantity", "efficiency", "realised_surplus", "max_surplus")


def figures(totals: Totals, equilibrium: Equilibrium) -> dict[str, float]:
    """Every metric of :data:`METRICS` for these totals, in that order."""
    return {m.key: m.value(totals, equilibrium) for m in METRICS}


def keys() -> list[str]:
    """The metrics' keys, in order: the columns the periods table has after its own."""
    return [m.key for m in METRICS]


def metric(key: str) -> Metric | None:
    """The metric named ``key``, None if there is none (an earnings column, a parameter)."""
    return next((m for m in METRICS if m.key == key), None)


def plotted() -> list[Metric]:
    """The metrics with a panel in ``run.py plot``, in panel order."""
    return sorted((m for m in METRICS if m.plot), key=lambda m: m.plot)


#: the trades of a step in which nobody met
NO_TRADES = {"deals": 0.0, "mean_price": math.nan, "min_price": math.nan,
             "max_price": math.nan, "price_std": math.nan}


def trades_of(stats: tuple | None) -> dict[str, float]:
    """A step's own trades (:data:`NO_TRADES` when nobody met) from its :func:`price_stats`."""
    return NO_TRADES if stats is None else _trades(stats)


def _trades(stats: tuple) -> dict[str, float]:
    n, total, _, lo, hi, std = stats[:6]
    return {
        "deals": float(n),
        "mean_price": total / n if n else math.nan,
        "min_price": float(lo),
        "max_price": float(hi),
        "price_std": float(std),
    }


def step_figures(step: int, period: int, pairs: int, trades: dict[str, float],
                 so_far: dict[str, float]) -> dict[str, float]:
    """The model variables of one step: its own trades, then the period so far.

    ``trades``: the step's own (:func:`trades_of`); ``so_far``: the
    period's figures; where the step's own trades take a name (deals, mean
    price, price spread) the step's figure stands, and the period's deals are
    ``period_deals``.
    """
    out = {"step": float(step), "period": float(period), "pairs": float(pairs),
           **trades, "period_deals": float(so_far["deals"])}
    out.update({k: float(v) for k, v in so_far.items() if k not in out})
    return out


#: the run's figures every step's row also carries (as ``run.KEY``): what a collector that
#: keeps only the last row (Mesa's ``batch_run``) needs to report the run, not its last step
RUN_KEYS = ("deals", "mean_price", "efficiency", "buyer_share", "seller_share")


def run_columns(run: dict[str, float]) -> dict[str, float]:
    """The run-so-far figures of :data:`RUN_KEYS`, keyed ``run.KEY``."""
    return {f"run.{k}": float(run[k]) for k in RUN_KEYS}


def team_wallets(books: Sequence[TraderArrays], n_teams: int) -> np.ndarray:
    """Earnings pooled per team id, over both sides."""
    w = np.concatenate([b.earnings for b in books])
    t = np.concatenate([b.team for b in books])
    return np.bincount(t, weights=w, minlength=n_teams)


_SIDE_KEYS = tuple(f"earnings.{s}" for s in SIDE_NAMES)


@functools.lru_cache(maxsize=1024)
def _earnings_key(side: int, name: str) -> str:
    return f"earnings.{SIDE_NAMES[side]}.{name}"


#: one side's earnings, the run so far: strategy names, the sum and count of its traders'
#: earnings per strategy (the counts whole numbers, floats as a compiled step's rows carry
#: them), and the side's mean (:func:`earnings_sums`)
SideEarnings = tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...], float]


def earnings_sums(books: Sequence[TraderArrays], names: Sequence[Sequence[str]]
                  ) -> tuple[SideEarnings, SideEarnings]:
    """Each side's earnings per strategy, summed (what :func:`earnings` reports), by side: a
    current trader's earnings under the strategy it plays now (what it earned under others
    counts for them)."""
    out = []
    for side in (SELLER, BUYER):
        book = books[side]
        sums, counts, mean = group_means(book.strategy, book.under_current(), len(names[side]))
        if book.moved:  # a strategy's mean counts what was earned under it; the side's, all
            mean = float(book.earnings.mean()) if len(book) else math.nan
        out.append((tuple(names[side]), tuple(sums.tolist()), tuple(counts.tolist()),
                    float(mean)))
    return out[0], out[1]


#: the columns of a compiled step's row (:func:`~market.sim.kernel.market_step`) before the
#: Sellers' earnings: the step's pairs, then its :func:`settle_sums`
ROW_SUMS = 11


def read_rows(rows: np.ndarray, names: tuple[tuple[str, ...], tuple[str, ...]]
              ) -> Iterator[tuple[int, tuple | None, SideEarnings, SideEarnings]]:
    """Each step of a compiled call's ``rows`` as the books read it (:func:`read_row`)."""
    for row in rows.tolist():
        yield read_row(row, names)


def read_row(row: list[float], names: tuple[tuple[str, ...], tuple[str, ...]]
             ) -> tuple[int, tuple | None, SideEarnings, SideEarnings]:
    """A step's row of a compiled call (as Python numbers: a numpy scalar or slice a field
    cost 3.7 us a step) as the books read it: its pairs, its :func:`settle_sums` (None
    when nobody met), and each side's :func:`earnings_sums` as the step ended (``names``:
    each side's strategies, which do not change within a call; the row has each one's
    earnings and traders)."""
    n_s, n_b = len(names[0]), len(names[1])
    a, b = ROW_SUMS, ROW_SUMS + 2 * n_s + 1
    return (int(row[0]), _sums(row) if row[0] else None,
            (names[0], tuple(row[a:a + n_s]), tuple(row[a + n_s:b - 1]), row[b - 1]),
            (names[1], tuple(row[b:b + n_b]), tuple(row[b + n_b:b + 2 * n_b]), row[b + 2 * n_b]))


def _sums(row: list[float]) -> tuple:
    """A row's :func:`settle_sums`, the counts as integers again."""
    return (int(row[1]), *row[2:10], int(row[10]))


def earnings(sums: Sequence[SideEarnings], teams: int | None = None,
             wallets: np.ndarray | None = None) -> dict[str, float]:
    """Mean earnings per trader of each strategy and side; each team's total (run so far).

    ``sums``: :func:`earnings_sums`; ``teams``: teams per side, None when
    every trader is its own team (then no team figures); ``wallets``:
    earnings per team id (Sellers' teams first, :func:`team_wallets`).
    """
    out = {}
    for side in (SELLER, BUYER):
        names, totals, counts, mean = sums[side]
        for name, total, count in zip(names, totals, counts, strict=True):
            if count:
                out[_earnings_key(side, name)] = total / count
        out[_SIDE_KEYS[side]] = mean
    if teams is not None and wallets is not None:
        for t in range(len(wallets)):
            side_name = "seller" if t < teams else "buyer"
            out[f"earnings.team.{side_name}.{t % teams}"] = float(wallets[t])
    return out


# --- a compiled call's rows: every institution's step writes them so ---------------------
@njit(cache=True)
def new_rows(k, r0, K, n_groups, n_sellers, n_buyers):  # noqa: ANN001, ANN201
    """The rows, deal levels and offsets of ``k`` steps from step ``r0`` of a period of ``K``
    (:func:`market.sim.kernel.market_step` returns them; a trader deals at most once a period)."""
    periods = (r0 + k - 1) // K + 1
    return (floats(k, ROW_SUMS + 2 * (n_groups + 1)),
            ints(periods * min(n_sellers, n_buyers), 0), ints(k + 1, 0))


@njit(cache=True)
def record_step(rows, j, sums, packed_j, levels, offsets, sides):  # noqa: ANN001, ANN201
    """Step ``j``'s row (:func:`market.sim.kernel.market_step`): its pairs, its ledger
    ``sums``, then each side's strategies' summed earnings, traders and mean (``sides``:
    ``(strategy, earnings, groups)`` of the Sellers, then of the Buyers); its deals' levels
    after the last step's (``offsets[j]`` where they begin), read from its packed results
    (:func:`market.sim.kernel.packed`). Compiled once per build, not per mix of strategies
    (it is not part of a template)."""
    row = rows[j]
    n = packed_j.shape[1]
    row[0] = n
    (row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], row[9],
     row[10]) = sums
    at = offsets[j]
    for i in range(n):
        if packed_j[3, i] > 0:
            levels[at] = np.int64(packed_j[3, i])  # exact: a level is far below 2**53
            at += 1
    offsets[j + 1] = at
    at = ROW_SUMS
    for strategy, earn, n_g in sides:
        earned, count, mean = group_means(strategy, earn, n_g)
        for g in range(n_g):  # element by element: a slice's copy compiles numba's
            row[at + g] = earned[g]  # shape-mismatch message (seconds of cold compile)
            row[at + n_g + g] = count[g]
        row[at + 2 * n_g] = mean
        at += 2 * n_g + 1
