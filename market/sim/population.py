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
from market.game.rules import BUYER, SELLER, Protocol, side_index
from market.sim import institutions
from market.sim.agents import TraderArrays
from market.sim.params import Params
from strategies import compiled, specs
from strategies.base import Strategy


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

    The strategy builds itself for the market
    (:meth:`~strategies.base.Strategy.for_market`) from its spec's argument, the
    market's parameters for it (``strategy_params``) and what the market is
    (:meth:`Params.setting <market.sim.params.Params.setting>`).
    """
    spec = specs.parse(text)
    extra = dict((p.strategy_params or {}).get(spec.name, {}))
    return spec.cls.for_market(side, max(count, 1), protocol, p.setting(rng), spec.arg, extra)


def reassign(book: TraderArrays, names: list[str], strategies: list[Strategy],
             traders: np.ndarray, to: int, rows: np.ndarray | None, p: Params,
             protocol: Protocol, rng: np.random.Generator) -> bool:
    """Traders ``traders`` of ``book``'s side play strategy ``to`` from now on; True if the
    population grew (the engine must bind it again).

    Each takes a member slot of that population: the lowest slots no trader
    holds first, then new ones past the end. Its state is a fresh member's
    (a population of the spec built for them, drawing from ``rng`` as the
    market's own did) or, with ``rows``, a copy of those members of the
    population (one per mover, read before anyone takes a slot). The caller
    binds the engine again if it grew: a population grows by half again (up to the side's
    size), so that revision period after period seldom grows it.
    """
    traders = np.asarray(traders, dtype=np.int64)
    if traders.size == 0:
        return False
    strat = strategies[to]
    if rows is not None:
        source = strat
    else:
        source = make_strategy(names[to], book.side, traders.size, p, protocol, rng)
        rows = np.arange(traders.size)
    book.bank(traders, len(names))  # what they earned counts for the strategy they leave
    book.strategy[traders] = -1  # the movers' old slots are free
    held = np.zeros(strat.n_members + traders.size, dtype=bool)
    held[book.member[book.strategy == to]] = True
    slots = np.flatnonzero(~held)[:traders.size]
    size = min(len(book), strat.n_members + strat.n_members // 2 + 1)
    grew = strat.seat(slots, source, rows, size)
    book.strategy[traders] = to
    book.member[traders] = slots
    return grew


def add_strategy(side: int, names: list[str], strategies: list[Strategy], spec: str,
                 p: Params, protocol: Protocol, rng: np.random.Generator,
                 compiled_only: bool = False) -> None:
    """A strategy joins a side's mix as a population (of one unseated member, until
    :func:`reassign` seats traders in it); ``compiled_only``: refuse one without a
    compiled decision (the compiled engine cannot play it); on a book (a double auction, a
    call market) refuse one that cannot quote there."""
    why = specs.why_not_in_book(spec) if institutions.get(p.institution).book else None
    if why:
        raise ValueError(f"strategy {spec!r} cannot play in institution {p.institution} "
                         f"({why})")
    strat = make_strategy(spec, side, 1, p, protocol, rng)
    if compiled_only and not compiled.has_form(strat):
        raise ValueError(f"strategy {spec!r} has no compiled decision; build the market "
                         "with engine='lockstep' to play it")
    names.append(spec)
    strategies.append(strat)


def set_strategy(books: tuple[TraderArrays, TraderArrays], names: tuple[list[str], list[str]],
                 strategies: tuple[list[Strategy], list[Strategy]], side: object,
                 traders: object, strategy: int | str, like: object, p: Params,
                 rng: np.random.Generator, compiled_only: bool) -> bool:
    """``MarketModel.set_strategy``, checked: traders ``traders`` of ``side`` play
    ``strategy`` (a name of the mix, its index, or a new spec, which joins the mix), fresh or
    as copies of the members ``like`` plays. True if the engine must bind the market again
    (a population was added or grew)."""
    if isinstance(side, str):
        s = side_index(side)
    elif isinstance(side, int | np.integer) and not isinstance(side, bool | np.bool_):
        s = int(side)
    else:
        s = -1  # 0.5, True: no side
    if s not in (SELLER, BUYER):
        raise ValueError(f"side must be 0 (seller), 1 (buyer) or a side's name, got {side!r}")
    if isinstance(strategy, str) and strategy != strategy.strip():
        raise ValueError(f"strategy must be a spec without surrounding spaces, got "
                         f"{strategy!r}")
    book, names_s, strats = books[s], names[s], strategies[s]
    movers = trader_indices(traders, len(book), "traders")
    added = isinstance(strategy, str) and strategy not in names_s
    if added:
        if like is not None:
            raise ValueError(f"like must name traders who play {strategy!r}; none does")
        add_strategy(s, names_s, strats, str(strategy), p, p.protocol, rng, compiled_only)
    to = strategy_index(strategy, names_s)
    rows = None
    if like is not None:
        models = trader_indices(like, len(book), "like", distinct=False)
        if models.shape != movers.shape:
            raise ValueError(f"like must name one trader per mover ({movers.size}), "
                             f"got {models.size}")
        if np.any(book.strategy[models] != to):
            raise ValueError(f"like must name traders who play {names_s[to]!r}")
        rows = book.member[models]
    return reassign(book, names_s, strats, movers, to, rows, p, p.protocol, rng) or added


def strategy_index(strategy: int | str, names: list[str]) -> int:
    """The index of ``strategy`` (a name of the side's mix, or an index) among ``names``."""
    if isinstance(strategy, str):
        if strategy not in names:
            raise ValueError(f"strategy must be one of the side's mix ({', '.join(names)}), "
                             f"got {strategy!r}")
        return names.index(strategy)
    if isinstance(strategy, bool | np.bool_) or not isinstance(strategy, int | np.integer):
        raise ValueError(f"strategy must be a name of the side's mix or an integer index in "
                         f"0..{len(names) - 1}, got {strategy!r}")
    g = int(strategy)
    if not 0 <= g < len(names):
        raise ValueError(f"strategy must be an index in 0..{len(names) - 1}, got {strategy!r}")
    return g


def trader_indices(traders: object, n: int, name: str, distinct: bool = True) -> np.ndarray:
    """Trader indices in ``0..n-1`` (one index or many; ``distinct``: none repeated), as an
    int64 array."""
    idx = np.atleast_1d(np.asarray(traders))
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise ValueError(f"{name} must be trader indices (integers), got {traders!r}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{name} must be indices in 0..{n - 1}")
    if distinct and np.unique(idx).size != idx.size:
        raise ValueError(f"{name} must not repeat a trader")
    return idx


def draw(p: Params, side: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Reservation prices of ``n`` traders of ``side``: Sellers' costs, Buyers' values (a
    schedule's, when the market has one: nothing is drawn)."""
    schedule = p.values_and_costs
    if schedule is not None:
        return schedule.of(side == BUYER, n)
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
