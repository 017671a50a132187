"""Who trades: each side's traders, their strategies, values and costs, and teams.

A side is a structure of arrays (:class:`~market.sim.agents.TraderArrays`)
plus the strategy populations its traders belong to: the mix's shares
become counts by largest remainder (deterministic), who plays what is
drawn, and each strategy is one population object playing all its members
at once. Every draw uses the generator handed in (the model's), in a fixed
order, so the same seed builds the same market.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from market.game.grid import PriceGrid
from market.game.rules import BUYER, SELLER, Protocol
from market.sim.agents import TraderArrays
from market.sim.params import Params
from strategies import specs
from strategies.base import MarketSetting, Strategy


def populate(
    p: Params, protocol: Protocol, rng: np.random.Generator
) -> tuple[tuple[TraderArrays, TraderArrays], tuple[list[str], list[str]],
           tuple[list[Strategy], list[Strategy]]]:
    """Both sides (Sellers first): their arrays, strategy names and strategy objects."""
    books, names, strats = [], [], []
    for side, n, mix in ((SELLER, p.n_sellers, p.seller_mix), (BUYER, p.n_buyers, p.buyer_mix)):
        labels, counts = assign(dict(mix or {}), n, rng)
        member = np.zeros(len(labels), dtype=np.int64)
        for g in range(len(counts)):
            idx = np.flatnonzero(labels == g)
            member[idx] = np.arange(idx.size)
        names.append(list(mix or {}))
        strats.append([make_strategy(spec, side, int(count), p, protocol, rng)
                       for spec, count in zip(mix or {}, counts, strict=True)])
        books.append(TraderArrays(side, draw(p, side, len(labels), rng), labels, member,
                                  np.zeros(len(labels), dtype=np.int64)))
    return (books[0], books[1]), (names[0], names[1]), (strats[0], strats[1])


def assign(mix: Mapping[str, float], n: int, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    """Counts by largest remainder (deterministic), then who gets what (drawn)."""
    shares = np.array(list(mix.values()), dtype=float)
    raw = shares * n
    counts = np.floor(raw).astype(np.int64)
    short = n - int(counts.sum())
    if short > 0:
        order = np.argsort(-(raw - counts), kind="stable")
        counts[order[:short]] += 1
    labels = rng.permutation(np.repeat(np.arange(len(counts)), counts))
    return labels.astype(np.int64), counts


def make_strategy(text: str, side: int, count: int, p: Params, protocol: Protocol,
                  rng: np.random.Generator) -> Strategy:
    """The population object of one strategy of a side (``count`` members, at least one).

    The strategy builds itself for the market (:meth:`Strategy.for_market`)
    from its spec's argument, the market's parameters for it
    (``strategy_params``) and what the market is (:class:`MarketSetting`).
    """
    spec = specs.parse(text)
    extra = dict((p.strategy_params or {}).get(spec.name, {}))
    market = MarketSetting(rational=p.rational_learners,
                           clock_buckets=p.clock_buckets if p.clock else 1,
                           clock_parts=p.clock_parts,
                           learner_params=p.learner_params, rng=rng)
    return spec.cls.for_market(side, max(count, 1), protocol, market, spec.arg, extra)


def draw(p: Params, side: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Reservation prices of ``n`` traders of ``side``: Sellers' costs, Buyers' values."""
    lo, hi = p.cost_range if side == SELLER else p.value_range
    dist = p.cost_dist if side == SELLER else p.value_dist
    if callable(dist):
        out = np.asarray(dist(rng, n, lo, hi), dtype=float)
        if out.shape != (n,):
            raise ValueError(f"a reservation-price distribution must return {n} numbers")
        return np.clip(out, lo, hi)
    if dist == "uniform":
        return rng.uniform(lo, hi, n)
    if dist == "normal":
        return np.clip(rng.normal((lo + hi) / 2, (hi - lo) / 6, n), lo, hi)
    return rng.triangular(lo, (lo + hi) / 2, hi, n)


def assign_teams(sellers: TraderArrays, buyers: TraderArrays, teams: int | None,
                 rng: np.random.Generator) -> np.ndarray:
    """Team ids (Sellers' teams first), drawn; every trader alone without ``teams``.

    Returns the size of each team, by team id.
    """
    ns, nb = len(sellers), len(buyers)
    if teams is None:
        sellers.team[:] = np.arange(ns)
        buyers.team[:] = ns + np.arange(nb)
    else:
        sellers.team[:] = rng.permutation(np.arange(ns) % teams)
        buyers.team[:] = teams + rng.permutation(np.arange(nb) % teams)
    n_teams = int(max(sellers.team.max(), buyers.team.max()) + 1)
    return np.bincount(np.concatenate([sellers.team, buyers.team]), minlength=n_teams)


def acceptable_levels(
    grid: PriceGrid, sellers: TraderArrays, buyers: TraderArrays
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Lowest and highest acceptable level per trader, by side: Seller price >= cost,
    Buyer price <= value."""
    P = grid.prices
    s, b = sellers.reservation, buyers.reservation
    lo = (grid.level_at_least(s), np.ones(len(b), dtype=np.int64))
    hi = (np.full(len(s), P, dtype=np.int64), grid.level_at_most(b))
    return lo, hi
