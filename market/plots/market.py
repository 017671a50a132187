"""The market run at a glance: transaction prices against the competitive band, supply and demand.

Left: per step, the transaction prices (one marker per price level, sized
by the number of deals) and their mean, over the competitive-equilibrium
price band of each period (so one sees whether
bargaining pairs find the price a competitive market would set). Right: the
current supply and demand step curves, where they cross, and the grid levels
the protocol can actually name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.game.grid import PriceGrid
from market.sim.yardsticks import competitive_equilibrium, supply_demand


def plot_market(
    model_df: pd.DataFrame,
    values: np.ndarray,
    costs: np.ndarray,
    grid: PriceGrid,
    title: str = "",
    prices_df: pd.DataFrame | None = None,
) -> Any:
    """The two-panel figure (matplotlib, Agg); save it with :func:`market.files.save_figure`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax_sd) = plt.subplots(
        1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [2, 1]}, constrained_layout=True
    )
    df = model_df[model_df["step"] > 0]
    step = df["step"].to_numpy()
    ax.fill_between(
        step, df["ce_price_lo"], df["ce_price_hi"], step="mid", color="tab:green", alpha=0.25,
        label="competitive band", linewidth=0,
    )
    for col in ("ce_price_lo", "ce_price_hi"):  # visible even when the band is a line
        ax.step(step, df[col], where="mid", color="tab:green", lw=0.8)
    has = df["deals"].to_numpy() > 0
    if prices_df is not None and len(prices_df):
        # every transaction price, one marker per step and level, area ~ number of deals
        deals = prices_df["deals"].to_numpy(dtype=float)
        ax.scatter(prices_df["step"], prices_df["price"], s=4 + 60 * deals / deals.max(),
                   color="tab:blue", alpha=0.35, linewidths=0, label="deals (area ~ count)")
    else:
        ax.vlines(step[has], df["min_price"].to_numpy()[has], df["max_price"].to_numpy()[has],
                  color="tab:blue", alpha=0.35, lw=2, label="min-max price")
    ax.plot(step[has], df["mean_price"].to_numpy()[has], "-", color="tab:red", lw=0.6,
            alpha=0.5, label="mean price per step")
    if prices_df is not None and len(prices_df):
        # a period's mean price, over the steps of that period (steps thin out late in a period)
        per = prices_df.assign(value=prices_df["price"] * prices_df["deals"]).groupby("period")
        mean = per["value"].sum() / per["deals"].sum()
        span = df.groupby("period")["step"].agg(["min", "max"]).loc[mean.index]
        ax.hlines(mean.to_numpy(), span["min"] - 0.5, span["max"] + 0.5, color="tab:red", lw=2,
                  label="mean price per period")
    for level_price in grid.price(np.arange(1, grid.prices + 1)):
        ax.axhline(level_price, color="0.85", lw=0.6, zorder=0)
    ax.set_xlabel("step")
    ax.set_ylabel("price")
    ax.set_ylim(grid.lo - 0.05 * (grid.hi - grid.lo), grid.hi + 0.05 * (grid.hi - grid.lo))
    ax.set_title("transaction prices")
    ax.legend(loc="upper right", fontsize=8)

    demand, supply = supply_demand(values, costs)
    eq = competitive_equilibrium(values, costs)
    # unit k spans [k-1, k] on the quantity axis
    ax_sd.step(np.arange(demand.size + 1), np.append(demand, demand[-1:]), where="post",
               color="tab:orange", label="demand (values)")
    ax_sd.step(np.arange(supply.size + 1), np.append(supply, supply[-1:]), where="post",
               color="tab:purple", label="supply (costs)")
    if np.isfinite(eq.price_lo):
        ax_sd.axhspan(eq.price_lo, eq.price_hi, color="tab:green", alpha=0.25,
                      label=f"band {eq.price_lo:.1f}-{eq.price_hi:.1f}")
        ax_sd.axvline(eq.quantity, color="tab:green", lw=1, ls="--", label=f"Q = {eq.quantity}")
    for level_price in grid.price(np.arange(1, grid.prices + 1)):
        ax_sd.axhline(level_price, color="0.85", lw=0.6, zorder=0)
    ax_sd.set_xlabel("units")
    ax_sd.set_ylim(ax.get_ylim())
    ax_sd.set_title("supply and demand (last period)")
    ax_sd.legend(loc="center left", fontsize=8)  # between the curves: it hides neither
    if title:
        fig.suptitle(title)
    return fig
