"""Figures from a batch results table: metrics against the swept parameters.

For every swept parameter (one with more than one value among the runs that
succeeded): the market metrics marked for plotting in
:data:`market.sim.ledger.METRICS` (efficiency and mean price) against it,
one panel each, and, for a population-mix
parameter (``buyer_mix.<strategy>``, ``seller_mix.<strategy>``), every
strategy's earnings per trader against it. Points are means over the runs
at that value with a 95 % Student-t confidence interval (``mean +/- t *
sd / sqrt(n)``), drawn as a band: the runs of one grid point differ only in
their seed, so the interval is over iterations. When other parameters are
swept too, the lines of the efficiency and price figures are split by their
combinations (up to :data:`MAX_LINES`), otherwise pooled, and the title
says so; earnings lines are always one per strategy, pooled over the other
parameters.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market.errors import UsageError
from market.files import all_or_nothing, save_figure
from market.sim import ledger
from market.sim.results import MIX_PREFIXES, load_results

MAX_LINES = 6


def t_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the two-sided Student-t interval (half-width NaN for n < 2)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    n = v.size
    if n == 0:
        return math.nan, math.nan
    mean = float(v.mean())
    if n < 2:
        return mean, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return mean, half


def summarize(df: pd.DataFrame, x: str, metric: str, by: Sequence[str] = ()) -> pd.DataFrame:
    """Mean, CI half-width and count of ``metric`` per value of ``x`` (and of ``by``)."""
    keys = [*by, x]
    rows = []
    for k, g in df.groupby(keys, sort=True, dropna=False):
        k = k if isinstance(k, tuple) else (k,)
        mean, half = t_interval(g[metric].to_numpy())
        rows.append({**dict(zip(keys, k, strict=True)), "mean": mean, "half": half,
                     "n": int(g[metric].notna().sum())})
    return pd.DataFrame(rows, columns=[*keys, "mean", "half", "n"])


def swept(df: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """Parameters with more than one value among ``df``'s rows."""
    return [p for p in params if df[p].nunique(dropna=False) > 1]


def earnings_columns(metrics: Sequence[str]) -> dict[str, list[str]]:
    """``earnings.<side>.<strategy>`` columns by side (team and side totals left out)."""
    out: dict[str, list[str]] = {"seller": [], "buyer": []}
    for m in metrics:
        parts = m.split(".")
        if len(parts) == 3 and parts[0] == "earnings" and parts[1] in out:
            out[parts[1]].append(m)
    return out


@dataclass
class ResultFigures:
    """The figures of a results table, planned: which files, then :meth:`draw` writes them.

    Planned before drawing so that a command can check every path first
    (:func:`market.files.check_outputs`) and write them all or none.
    """

    files: list[Path]
    _jobs: list[Callable[[], Path]]

    def draw(self, done: Callable[[Path], None] | None = None) -> list[Path]:
        """Draw and save every figure; the paths, in :attr:`files` order. ``done(path)``
        after each (a progress bar)."""
        out = []
        for job in self._jobs:
            out.append(job())
            if done is not None:
                done(out[-1])
        return out


def result_figures(path: str | os.PathLike[str], out_dir: str | os.PathLike[str]
                   ) -> ResultFigures:
    """Read and check the table at ``path`` and plan its figures in ``out_dir``."""
    df, params, metrics = load_results(path)
    ok = df[df["error"].isna()]
    if ok.empty:
        raise UsageError(f"RESULTS {os.fspath(path)}: every run failed; nothing to plot")
    out = Path(out_dir)
    files: list[Path] = []
    jobs: list[Callable[[], Path]] = []

    def plan(target: Path, draw: Callable[..., Path], *args: Any) -> None:
        files.append(target)
        jobs.append(lambda: draw(*args, target))

    sweep = swept(ok, params)
    earn = earnings_columns(metrics)
    plotted = [m.key for m in ledger.plotted() if m.key in ok.columns]
    for x in sweep:
        others = [p for p in sweep if p != x]
        if plotted:
            plan(out / f"{_slug(x)}_market.png", _metric_figure, ok, x, plotted, others)
        if x.startswith(MIX_PREFIXES) and any(earn.values()):
            plan(out / f"{_slug(x)}_earnings.png", _earnings_figure, ok, x, earn, others)
    if not sweep and any(earn.values()):
        plan(out / "earnings.png", _earnings_bars, ok, earn)
    return ResultFigures(files, jobs)


def plot_results(path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write the figures for the table at ``path`` into ``out_dir``, all or none; their paths."""
    import matplotlib


    matplotlib.use("Agg")
    figures = result_figures(path, out_dir)
    with all_or_nothing():
        return figures.draw()


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def _positions(values: pd.Series) -> tuple[dict[Any, float], list[Any] | None]:
    """x positions: the values themselves if numeric; else categories (an institution, a
    schedule) at 0, 1, ... in the order the batch swept them, with tick labels."""
    uniq = values.dropna().unique().tolist()  # in the order of the runs: the grid's
    if all(isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
           for v in uniq):
        return {v: float(v) for v in sorted(uniq)}, None
    return {v: float(i) for i, v in enumerate(uniq)}, uniq


def _line(ax: Any, s: pd.DataFrame, x: str, pos: dict[Any, float], label: str,
          categories: bool = False) -> None:
    """One series: a line with its interval as a band over a number, or points with their
    intervals as error bars over categories (nothing lies between two institutions)."""
    xs = np.array([pos[v] for v in s[x]])
    order = np.argsort(xs)
    xs, mean, half = xs[order], s["mean"].to_numpy()[order], s["half"].to_numpy()[order]
    band = np.nan_to_num(half)
    if categories:
        ax.errorbar(xs, mean, yerr=band, fmt="o", capsize=4, label=label)
        return
    (line,) = ax.plot(xs, mean, marker="o", label=label)
    ax.fill_between(xs, mean - band, mean + band, color=line.get_color(), alpha=0.2)


def _finish_axis(ax: Any, x: str, ticks: list[Any] | None, pos: dict[Any, float]) -> None:
    ax.set_xlabel(x)
    if ticks is not None:
        ax.set_xticks([pos[t] for t in ticks], [str(t) for t in ticks])
    elif len(pos) <= 12:  # a tick at every swept value, none in between
        ax.set_xticks(sorted(pos.values()), [f"{v:g}" for v in sorted(pos.values())])
    ax.grid(alpha=0.3)


def _metric_figure(df: pd.DataFrame, x: str, shown: list[str], others: list[str],
                   path: Path) -> Path:
    import matplotlib.pyplot as plt


    combos = df[others].drop_duplicates() if others else pd.DataFrame()
    split = bool(others) and len(combos) <= MAX_LINES
    pos, ticks = _positions(df[x])
    fig, axes = plt.subplots(1, len(shown), figsize=(5.2 * len(shown), 4), squeeze=False)
    labels = {m: _label(m) for m in shown}
    for ax, metric in zip(axes[0], shown, strict=True):
        if split:
            s = summarize(df, x, metric, by=others)
            for combo, g in s.groupby(others, sort=True):
                combo = combo if isinstance(combo, tuple) else (combo,)
                label = ", ".join(f"{k}={v}" for k, v in zip(others, combo, strict=True))
                _line(ax, g, x, pos, label, ticks is not None)
            ax.legend(fontsize=7)
        else:
            _line(ax, summarize(df, x, metric), x, pos, "all runs", ticks is not None)
        ax.set_ylabel(labels.get(metric, metric))
        _finish_axis(ax, x, ticks, pos)
    how = ("" if not others else
           f"; lines by {', '.join(others)}" if split else f"; pooled over {', '.join(others)}")
    fig.suptitle(f"{', '.join(labels.get(m, m) for m in shown)} against {x}\n"
                 f"mean over runs with 95% t-interval{how}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def _label(key: str) -> str:
    """A metric's words (:mod:`market.sim.ledger`), else its key."""
    m = ledger.metric(key)
    return m.label if m is not None and m.label else key


def _earnings_figure(df: pd.DataFrame, x: str, earn: dict[str, list[str]], others: list[str],
                     path: Path) -> Path:
    import matplotlib.pyplot as plt


    sides = [s for s in ("seller", "buyer") if earn[s]]
    pos, ticks = _positions(df[x])
    fig, axes = plt.subplots(1, len(sides), figsize=(5.2 * len(sides), 4), squeeze=False,
                             sharey=True)
    for ax, side in zip(axes[0], sides, strict=True):
        for col in earn[side]:
            s = summarize(df, x, col).dropna(subset=["mean"])
            if not s.empty:
                _line(ax, s, x, pos, col.split(".", 2)[2], ticks is not None)
        ax.set_title(f"{side}s")
        ax.set_ylabel("earnings per trader")
        _finish_axis(ax, x, ticks, pos)
        ax.legend(fontsize=8, title="strategy")
    how = f"; pooled over {', '.join(others)}" if others else ""
    fig.suptitle(f"Earnings by strategy against {x}\n"
                 f"mean over runs with 95% t-interval{how}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def _earnings_bars(df: pd.DataFrame, earn: dict[str, list[str]], path: Path) -> Path:
    import matplotlib.pyplot as plt


    cols = earn["seller"] + earn["buyer"]
    stats = [t_interval(df[c].to_numpy()) for c in cols]
    fig, ax = plt.subplots(figsize=(1.2 * len(cols) + 2, 4))
    ax.bar(range(len(cols)), [m for m, _ in stats],
           yerr=[0 if math.isnan(h) else h for _, h in stats], capsize=4)
    ax.set_xticks(range(len(cols)), [c.split(".", 1)[1] for c in cols], rotation=30, ha="right")
    ax.set_ylabel("earnings per trader")
    ax.set_title(f"Earnings by strategy (mean of {len(df)} runs, 95% t-interval)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)
