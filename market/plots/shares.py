"""Which strategies survive: each side's strategy shares over the periods, stacked.

One panel per side, a band per strategy of the side's mix (the Axelrod
library's ecosystem figure, for a market whose traders revise their
strategy at each period's end): the width of a band at a period is the
share of the side's traders who played that strategy in it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def plot_shares(shares_df: pd.DataFrame, title: str = "") -> Any:
    """The two-panel stack plot (matplotlib, Agg) of a ``shares`` table (period, side,
    strategy, share); save it with :func:`market.files.save_figure`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True, constrained_layout=True)
    for ax, side in zip(axes, ("seller", "buyer"), strict=True):
        part = shares_df[shares_df["side"] == side]
        wide = part.pivot_table(index="period", columns="strategy", values="share",
                                sort=False).fillna(0.0)
        if len(wide):
            ax.stackplot(wide.index.to_numpy(), wide.to_numpy().T, labels=list(wide.columns),
                         alpha=0.85)
            ax.set_xlim(wide.index.min(), max(wide.index.max(), wide.index.min() + 1))
            ax.legend(loc="upper left", fontsize=8, ncol=2)
        ax.set_ylim(0, 1)
        ax.set_yticks(np.linspace(0, 1, 6))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("period")
        ax.set_title(f"{side}s")
    axes[0].set_ylabel("share of the side's traders")
    if title:
        fig.suptitle(title)
    return fig
