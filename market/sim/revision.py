"""Strategy revision: at the end of each trading period some traders change strategy.

Each trader of a side revises with probability ``rate`` (drawn per
trader); what a reviser adopts depends on the protocol, from the period's
payoffs ``pi`` (each trader's earnings in the period, or its team's per
member under a common wallet), scaled by ``span`` (the most a trader can
earn in a period, one unit at the widest price gap) so that rates and
selection intensities mean the same whatever the money unit:

- ``imitate``: pairwise proportional imitation (Schlag 1998). The reviser
  meets a trader of its side drawn uniformly among the others and adopts
  that trader's strategy with probability ``max(0, pi_j - pi_i) / span``.
- ``moran``: birth-death Moran process (Nowak et al. 2004), the revisers
  being the deaths: each adopts the strategy of a parent drawn from its side
  with probability proportional to the fitness ``exp(w * pi / span)``
  (``w``: the selection intensity; 0 is neutral drift).
- ``replicator``: the discrete replicator dynamics of the side's shares
  with the same exponential fitness, ``x'_s = x_s * F_s / F`` (``F_s`` the
  mean fitness of strategy ``s``, ``F`` the side's), realised by letting
  each reviser draw its strategy from ``x'`` (so the shares move a fraction
  ``rate`` of the way in expectation; ``rate = 1`` redraws the whole side).

Then mutation: each reviser, with probability ``mutation``, adopts a
strategy drawn uniformly from the side's mix (strategies listed at share 0
enter only so). Every draw comes from the generator handed in, in a fixed
order (revisers, then the protocol's draws, then mutation), so the same
seed gives the same population on both engines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from market.sim.declared import INHERIT, REVISIONS

__all__ = ["INHERIT", "REVISIONS", "Revision", "replicator_step", "revise", "shares"]


@dataclass(frozen=True)
class Revision:
    """How a market revises: protocol, share of revisers per period, selection intensity,
    mutation probability and what an adopted learner starts from."""

    protocol: str = "none"
    rate: float = 0.1
    selection: float = 1.0
    mutation: float = 0.0
    inherit: str = "fresh"


def revise(rule: Revision, strategy: np.ndarray, payoff: np.ndarray, n_strategies: int,
           span: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The side's strategies after one revision, and each trader's model (the trader whose
    strategy it adopted, ``-1`` for none: it kept its own, mutated or drew from shares).

    ``strategy``: each trader's strategy index (``0 .. n_strategies - 1``);
    ``payoff``: each trader's payoff in the period; ``span``: the payoff
    scale (> 0).
    """
    n = strategy.size
    new = strategy.copy()
    model = np.full(n, -1, dtype=np.int64)
    if rule.protocol == "none" or n == 0:
        return new, model
    revisers = np.flatnonzero(rng.random(n) < rule.rate)
    k = revisers.size
    scaled = np.asarray(payoff, dtype=float) / span
    if k and n > 1 and rule.protocol == "imitate":
        other = rng.integers(0, n - 1, k)
        other += other >= revisers  # uniform among the others
        gain = np.clip(scaled[other] - scaled[revisers], 0.0, 1.0)
        switch = rng.random(k) < gain
        new[revisers[switch]] = strategy[other[switch]]
        model[revisers[switch]] = other[switch]
    elif k and rule.protocol == "moran":
        fitness = _fitness(scaled, rule.selection)
        parents = _draw(fitness / fitness.sum(), k, rng)
        new[revisers] = strategy[parents]
        model[revisers] = parents
    elif k and rule.protocol == "replicator":
        target = replicator_step(strategy, _fitness(scaled, rule.selection), n_strategies)
        new[revisers] = _draw(target, k, rng)
    if k and rule.mutation > 0:
        mutate = rng.random(k) < rule.mutation
        m = int(mutate.sum())
        new[revisers[mutate]] = rng.integers(0, n_strategies, m)
        model[revisers[mutate]] = -1
    model[new == strategy] = -1  # kept its strategy: nothing to inherit
    return new, model


def replicator_step(strategy: np.ndarray, fitness: np.ndarray, n_strategies: int
                    ) -> np.ndarray:
    """The shares one discrete replicator step leads to: ``x_s * F_s / F``."""
    counts = np.bincount(strategy, minlength=n_strategies).astype(float)
    total = np.bincount(strategy, weights=fitness, minlength=n_strategies)
    shares = counts / counts.sum()
    mean = np.divide(total, counts, out=np.zeros(n_strategies), where=counts > 0)
    grown = shares * mean
    return grown / grown.sum()


def shares(strategy: np.ndarray, n_strategies: int) -> np.ndarray:
    """Each strategy's share of the side."""
    counts = np.bincount(strategy, minlength=n_strategies).astype(float)
    return counts / max(strategy.size, 1)


def _fitness(scaled: np.ndarray, w: float) -> np.ndarray:
    """Exponential fitness ``exp(w * pi)``, shifted so the largest is 1 (no overflow)."""
    return np.exp(w * (scaled - scaled.max()))


def _draw(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices drawn with probabilities ``p`` (inverse CDF of ``k`` uniforms)."""
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(k), side="right").astype(np.int64)
