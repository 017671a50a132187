"""Strategy revision: at the end of each trading period some traders change strategy.

What a trader adopts depends on the protocol, from the period's payoffs
``pi`` (each trader's earnings in the period, or its team's per member under
a common wallet), scaled by ``span`` (the most a trader can earn in a period,
one unit at the widest price gap) so that rates and selection intensities
mean the same whatever the money unit. A strategy's fitness, where a
protocol uses one, is that of its *mean* payoff through the exponential
mapping of Traulsen, Shoresh and Nowak (2008): ``F_s = exp(w * mean_s(pi) /
span)`` (``w``: the selection intensity, ``--selection``; 0 is neutral
drift). Shares are ``x_s``, the mean fitness ``F = sum_s x_s F_s``.

Each protocol: who revises, what a reviser adopts, and the expected change
of ``x_s`` in one period (the spec the tests check over many seeds):

- ``imitate`` (pairwise proportional imitation, Schlag 1998): each trader
  revises with probability ``rate``; it meets another trader ``j`` drawn
  uniformly and adopts ``j``'s strategy with probability
  ``beta * max(0, pi_j - pi_i)``. Expected change:
  ``rate * x_s * sum_t x_t * beta * (mean pi_s - mean pi_t)`` (for large sides).
- ``moran`` (a birth-death Moran process; Moran 1958, Nowak et al. 2004):
  ``K ~ Binomial(n, rate)`` events, one after the other (``rate`` is events
  per trader and period); in each, a parent of strategy ``s`` is drawn with
  probability ``x_s F_s / F``, and its offspring replaces a trader drawn
  uniformly (the parent too, possibly); shares and odds change after each
  event. Expected change per event: ``(x_s F_s / F - x_s) / n`` at the
  shares as they stand.
- ``replicator`` (the discrete replicator map): each trader revises with
  probability ``rate`` and draws its strategy from ``x'_s = x_s F_s / F``,
  the map of the period's shares. Expected change: ``rate * (x'_s - x_s)``,
  a fraction ``rate`` of the map's step (``rate = 1`` redraws the side).

``beta = 1 / max(span, pi_max - pi_min)``: Schlag's condition (``beta`` at
most one over the payoff range) with the range the period's payoffs actually
span, so switching stays proportional when traders lose money (costs per
offer, traders who may trade at a loss); with every payoff in a range of one
``span`` it is ``1 / span``.

``moran`` and ``replicator`` share their expected direction (the replicator
map is the Moran process's mean field), not their process: the replicator
revises a batch of traders at once from the period's shares, the Moran
process one birth and one death at a time, the shares (and so each parent's
odds) changing after each event, with drift of order ``1 / n`` per event.

Then mutation: each reviser (each event's offspring under ``moran``), with
probability ``mutation``, adopts a strategy drawn uniformly from the side's
mix instead (strategies listed at share 0 enter only so). Every draw comes
from the generator handed in, in a fixed order (the protocol's draws, then
mutation; under ``moran`` per event: the parent's strategy, the trader
replaced, with ``--inherit copy`` the parent among its strategy's traders
(drawn uniformly, by rejection), the mutation), so the same seed gives the
same population on both engines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from market.game.rules import BUYER, SELLER, SIDE_NAMES
from market.sim import population
from market.sim.declared import INHERIT, REVISIONS
from market.sim.state import Market

__all__ = ["INHERIT", "REVISIONS", "Revision", "fitness", "imitation_beta", "replicator_step",
           "revise", "revise_market", "share_rows", "shares"]


@dataclass(frozen=True)
class Revision:
    """How a market revises: protocol, share of revisers per period (birth-death events per
    trader and period under ``moran``), selection intensity, mutation probability and what
    an adopted learner starts from."""

    protocol: str = "none"
    rate: float = 0.1
    selection: float = 1.0
    mutation: float = 0.0
    inherit: str = "fresh"

    @classmethod
    def of(cls, market: Market) -> Revision:
        """The market's revision, from its parameters."""
        p = market.params
        return cls(p.revision, p.revision_rate, p.selection, p.mutation, p.inherit)


def revise_market(market: Market, rng: np.random.Generator) -> bool:
    """Each side's revisers change strategy by the market's protocol; the movers join their
    new populations, fresh or as copies of their models (``inherit``). True if a population
    grew (the engine must bind the market again; else every seat was written in place, into
    the arrays the engine reads)."""
    rule = Revision.of(market)
    grew = False
    for side in (SELLER, BUYER):
        book, names = market.books[side], market.names[side]
        new, model = revise(rule, book.strategy, market.period_payoffs(side), len(names),
                            market.span, rng)
        moved = new != book.strategy
        market.switches[side] += int(moved.sum())
        copy = model >= 0 if rule.inherit == "copy" else np.zeros_like(moved)
        rows = np.where(copy, book.member[np.maximum(model, 0)], -1)  # before anyone moves
        for g in np.unique(new[moved]).tolist():
            into = moved & (new == g)
            copied, fresh = np.flatnonzero(into & copy), np.flatnonzero(into & ~copy)
            for who, like in ((copied, rows[copied]), (fresh, None)):
                grew |= population.reassign(book, names, market.strategies[side], who, g, like,
                                            market.params, market.protocol, rng)
    return grew


def share_rows(market: Market, period: int, last_step: int) -> list[dict[str, Any]]:
    """One row per side and strategy of the mix: traders, share and mean payoff in the
    period (the collector's ``shares`` table)."""
    out = []
    for side in (SELLER, BUYER):
        names, counts = market.names[side], market.counts(side)
        sums = np.bincount(market.books[side].strategy, weights=market.period_payoffs(side),
                           minlength=len(names))
        for g, name in enumerate(names):
            out.append({"period": period, "last_step": last_step, "side": SIDE_NAMES[side],
                        "strategy": name, "traders": int(counts[g]),
                        "share": counts[g] / len(market.books[side]),
                        "mean_earnings": sums[g] / counts[g] if counts[g] else math.nan})
    return out


def revise(rule: Revision, strategy: np.ndarray, payoff: np.ndarray, n_strategies: int,
           span: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The side's strategies after one revision, and each trader's model (the trader whose
    strategy, and tables, it adopted; ``-1`` for none: it kept its own, mutated or drew
    from the shares).

    ``strategy``: each trader's strategy index (``0 .. n_strategies - 1``);
    ``payoff``: each trader's payoff in the period; ``span``: the payoff
    scale (> 0).
    """
    n = strategy.size
    if rule.protocol == "none" or n == 0:
        return strategy.copy(), np.full(n, -1, dtype=np.int64)
    scaled = np.asarray(payoff, dtype=float) / span
    if rule.protocol == "moran":
        return _moran(rule, strategy, fitness(strategy, scaled, rule.selection, n_strategies),
                      n_strategies, rng)
    new = strategy.copy()
    model = np.full(n, -1, dtype=np.int64)
    revisers = np.flatnonzero(rng.random(n) < rule.rate)
    k = revisers.size
    if k and n > 1 and rule.protocol == "imitate":
        other = rng.integers(0, n - 1, k)
        other += other >= revisers  # uniform among the others
        gain = np.maximum(scaled[other] - scaled[revisers], 0.0) * imitation_beta(scaled)
        switch = rng.random(k) < gain
        new[revisers[switch]] = strategy[other[switch]]
        model[revisers[switch]] = other[switch]
    elif k and rule.protocol == "replicator":
        target = replicator_step(strategy, fitness(strategy, scaled, rule.selection,
                                                   n_strategies), n_strategies)
        new[revisers] = _draw(target, k, rng)
    if k and rule.mutation > 0:
        mutate = rng.random(k) < rule.mutation
        m = int(mutate.sum())
        new[revisers[mutate]] = rng.integers(0, n_strategies, m)
        model[revisers[mutate]] = -1
    model[new == strategy] = -1  # kept its strategy: nothing to inherit
    return new, model


def _moran(rule: Revision, strategy: np.ndarray, fit: np.ndarray, n_strategies: int,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``K ~ Binomial(n, rate)`` birth-death events, one at a time (module docstring)."""
    n = strategy.size
    cur = strategy.copy()
    origin = np.arange(n)  # whose tables each trader holds: itself, or its lineage's root
    counts = np.bincount(cur, minlength=n_strategies).astype(float)
    copy = rule.inherit == "copy"
    for _ in range(int(rng.binomial(n, rule.rate))):
        weight = counts * fit
        s = int(_draw(weight / weight.sum(), 1, rng)[0])  # the parent's strategy
        dead = int(rng.integers(0, n))  # the trader its offspring replaces
        born, root = s, dead
        if copy:  # the parent itself, uniform among the traders of strategy s (whose tables)
            parent = int(rng.integers(0, n))
            while cur[parent] != s:
                parent = int(rng.integers(0, n))
            root = origin[parent]
        if rule.mutation > 0 and rng.random() < rule.mutation:
            born, root = int(rng.integers(0, n_strategies)), dead
        counts[cur[dead]] -= 1
        counts[born] += 1
        cur[dead], origin[dead] = born, root
    model = np.where(origin != np.arange(n), origin, -1).astype(np.int64)
    model[cur == strategy] = -1  # its strategy as before: nothing to inherit
    model[(model >= 0) & (strategy[np.maximum(model, 0)] != cur)] = -1  # a mutant: fresh
    return cur, model


def fitness(strategy: np.ndarray, scaled: np.ndarray, w: float, n_strategies: int
            ) -> np.ndarray:
    """Each strategy's fitness ``exp(w * mean payoff)`` (payoffs scaled by the span), shifted
    so the largest present is 1 (no overflow); 0 for a strategy nobody plays."""
    counts = np.bincount(strategy, minlength=n_strategies)
    total = np.bincount(strategy, weights=scaled, minlength=n_strategies)
    mean = np.divide(total, counts, out=np.zeros(n_strategies), where=counts > 0)
    top = mean[counts > 0].max()
    return np.where(counts > 0, np.exp(w * (mean - top)), 0.0)


def replicator_step(strategy: np.ndarray, fit: np.ndarray, n_strategies: int) -> np.ndarray:
    """The shares one discrete replicator step leads to: ``x_s * F_s / F``, ``F_s`` each
    strategy's fitness (:func:`fitness`)."""
    counts = np.bincount(strategy, minlength=n_strategies).astype(float)
    grown = counts / counts.sum() * fit
    return grown / grown.sum()


def imitation_beta(scaled: np.ndarray) -> float:
    """Schlag's ``beta`` on payoffs scaled by the span: one over the larger of the span and
    the range the period's payoffs span (module docstring)."""
    return 1.0 / max(1.0, float(scaled.max() - scaled.min()))


def shares(strategy: np.ndarray, n_strategies: int) -> np.ndarray:
    """Each strategy's share of the side."""
    counts = np.bincount(strategy, minlength=n_strategies).astype(float)
    return counts / max(strategy.size, 1)


def _draw(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` indices drawn with probabilities ``p`` (inverse CDF of ``k`` uniforms)."""
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    return np.searchsorted(cdf, rng.random(k), side="right").astype(np.int64)
