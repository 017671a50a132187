"""The tournament's heatmap: payoffs of every pairing, as the Seller, as the Buyer, both."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from market.files import save_figure


def plot_heatmap(result: Any, path: str | os.PathLike[str]) -> Path:
    """Three panels: Seller's and Buyer's payoffs (row Seller vs column Buyer), both-sides mean.

    ``result``: a :class:`~market.runs.tournament.TournamentResult` (its payoff
    matrices, protocol, repetitions and seed).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    panels = [
        ("Seller's payoff", result.seller_payoff, "row as Seller", "column as Buyer"),
        ("Buyer's payoff", result.buyer_payoff, "row as Seller", "column as Buyer"),
        ("Mean payoff over both sides", result.mean_payoff, "strategy", "opponent"),
    ]
    n = max(len(result.seller_payoff.columns), len(result.mean_payoff.columns), 1)
    size = 1.6 + 0.7 * n
    fig, axes = plt.subplots(1, 3, figsize=(3 * size + 1.5, size + 0.8), constrained_layout=True)
    for ax, (title, df, ylab, xlab) in zip(axes, panels, strict=True):
        im = ax.imshow(df.to_numpy(dtype=float), vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(len(df.columns)), [str(c) for c in df.columns], rotation=45,
                      ha="right")
        ax.set_yticks(range(len(df.index)), [str(r) for r in df.index])
        ax.set_title(title)
        ax.set_xlabel(xlab)
        ax.set_ylabel(ylab)
        for i in range(df.shape[0]):
            for j in range(df.shape[1]):
                v = df.iat[i, j]
                ax.text(j, i, "" if v != v else f"{v:.2f}", ha="center", va="center",
                        color="white" if v < 0.6 else "black", fontsize=8)
    fig.colorbar(im, ax=axes, shrink=0.8, label="two-agent reward")
    fig.suptitle(
        f"Tournament: P={result.protocol.prices}, T={result.protocol.rounds}, "
        f"{result.repetitions} negotiations per pairing and first mover, seed {result.seed}"
    )
    return save_figure(fig, path)
