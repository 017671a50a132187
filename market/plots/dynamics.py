"""The tournament's evolution: shares over time under each dynamic, stacked (the Axelrod
library's ecosystem figure), one panel per trajectory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from market.files import save_figure


def plot_dynamics(evolution: Any, path: str | os.PathLike[str]) -> Path:
    """A stack plot per trajectory of ``evolution`` (:class:`~market.runs.dynamics.Evolution`)
    and, beside them, alpha-Rank's masses if computed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    panels = list(evolution.trajectories.items())
    bars = evolution.alpharank is not None
    n = max(len(panels) + bars, 1)
    names: list[str] = []  # every strategy, in order of first appearance: one colour each
    for _, traj in panels:
        names += [c for c in traj.shares.columns if c not in names]
    if bars:
        names += [c for c in evolution.alpharank.index if c not in names]
    palette = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    colour = {name: palette(k % palette.N) for k, name in enumerate(names)}
    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 4.6), constrained_layout=True,
                             squeeze=False)
    for ax, (name, traj) in zip(axes[0], panels, strict=False):
        shares = traj.shares
        ax.stackplot(shares.index.to_numpy(), shares.to_numpy().T, labels=list(shares.columns),
                     colors=[colour[c] for c in shares.columns], alpha=0.85)
        ax.set_ylim(0, 1)
        ax.set_xlim(shares.index.min(), max(shares.index.max(), shares.index.min() + 1))
        ax.set_xlabel(shares.index.name or "time")
        ax.set_ylabel("share of the population")
        ax.set_title(f"{name}" + (" (at rest)" if traj.at_rest else ""))
    if bars:
        ax = axes[0][len(panels)]
        pi = evolution.alpharank.sort_values(ascending=False)
        ax.bar(range(len(pi)), pi.to_numpy(), color=[colour[c] for c in pi.index])
        ax.set_xticks(range(len(pi)), list(pi.index), rotation=45, ha="right")
        ax.set_ylim(0, 1)
        ax.set_ylabel("stationary mass")
        ax.set_title(f"alpha-Rank (N={evolution.population}, alpha={evolution.selection:g})")
    if names:  # below the panels, where it hides no trajectory
        handles = [Patch(facecolor=colour[c], alpha=0.85, label=c) for c in names]
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(names), 6),
                   fontsize=8, frameon=False)
    fig.suptitle("Which strategies survive the tournament")
    return save_figure(fig, path)
