"""The document's training figure, plus NashConv per cycle.

Panels: validated and rejected per cycle for the Seller, the same for the
Buyer (who accepted or walked away), both wallets per cycle, and NashConv of
the tables at the end of each cycle. With several seeds each line is the
median across seeds and the band spans the 10th to 90th percentiles.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from market.files import save_figure


def _band(ax, history: pd.DataFrame, column: str, label: str, color: str) -> None:
    g = history.groupby("cycle")[column]
    med = g.median()
    ax.plot(med.index, med.values, "o-", ms=3, label=label, color=color)
    if history["seed"].nunique() > 1:
        ax.fill_between(med.index, g.quantile(0.1).values, g.quantile(0.9).values,
                        color=color, alpha=0.2, linewidth=0)


def plot_history(history: pd.DataFrame, path: str | os.PathLike[str], title: str = "") -> Path:
    """Save the training figure for ``history`` (see :class:`market.game.training.TrainResult`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 4 if "nash_conv" in history.columns else 3
    fig, axes = plt.subplots(panels, 1, figsize=(8, 2.4 * panels), sharex=True)
    for ax, side in zip(axes[:2], ("seller", "buyer"), strict=True):
        ax.set_title(side.capitalize())
        _band(ax, history, f"{side}_validated", "Validated", "g")
        _band(ax, history, f"{side}_rejected", "Rejected", "r")
        ax.set_ylabel("episodes")
        ax.legend(loc="upper right", fontsize="small")
    ax = axes[2]
    ax.set_title("Wallet")
    _band(ax, history, "seller_wallet", "Seller", "b")
    _band(ax, history, "buyer_wallet", "Buyer", "m")
    ax.set_ylabel("sum of levels")
    ax.legend(loc="upper right", fontsize="small")
    if panels == 4:
        ax = axes[3]
        ax.set_title("NashConv of the tables after each cycle (0 = equilibrium)")
        _band(ax, history, "nash_conv", "NashConv", "k")
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("cycle")
    n = history["seed"].nunique() if len(history) else 0
    sup = title or "Training"
    if n > 1:
        sup += f" (median of {n} seeds, band: 10th-90th percentile)"
    fig.suptitle(sup)
    fig.tight_layout()
    return save_figure(fig, path)
