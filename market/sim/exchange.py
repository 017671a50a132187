"""Around the negotiations of a step: who meets whom, deals changing hands, learners' pay.

:func:`hold_units` gives every trader its unit back as a period opens,
:func:`pair` matches the traders still holding their unit at random,
:func:`openers` draws who opens each negotiation, :func:`settle_deals` moves
money between the paired traders' arrays for every deal (cash, earnings,
units traded) and :func:`pay` turns the gains into each learner's reward
(a share of the price range, pooled per team under a common wallet).

Each is compiled once (numba) and is the one implementation of its rule:
the compiled market engine (:mod:`market.sim.engine`) calls them inside its
step, and the lockstep path, for markets holding a strategy without a
compiled decision, calls the very same functions from Python, so the two
paths cannot drift apart. :func:`learn` is the lockstep path's learning: it
hands every learning population the rows it played.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from market.compiled.jit import njit
from market.game import moves, numeric
from market.game.moves import OPEN_RANDOM
from market.game.pressure import Pressure
from market.game.record import BatchRecord
from market.game.rules import BUYER, SELLER
from market.sim.agents import TraderArrays
from strategies.base import Strategy

#: who opens: drawn per negotiation (the game's rule, :data:`market.game.moves.OPEN_RANDOM`),
#: or always one side
OPEN_SELLER, OPEN_BUYER = SELLER, BUYER


@njit(cache=True)
def hold_units(traded_s: np.ndarray, traded_b: np.ndarray) -> None:
    """A new trading period: every trader holds its unit again (one unit per trader per
    period). The model opens each period with it; the compiled step too, when one call runs
    on into the next period."""
    for traded in (traded_s, traded_b):
        for i in range(traded.size):
            traded[i] = False


@njit(cache=True)
def pair(traded_s: np.ndarray, traded_b: np.ndarray, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray]:
    """Sellers and Buyers still holding their unit, matched at random (the longer side's
    extra traders wait): one permutation of each side's free traders, cut to the shorter."""
    free_s = np.flatnonzero(~traded_s)
    free_b = np.flatnonzero(~traded_b)
    n = min(free_s.size, free_b.size)
    return numeric.permutation(rng, free_s)[:n], numeric.permutation(rng, free_b)[:n]


@njit(cache=True)
def openers(n: int, mode: int, rng: np.random.Generator) -> np.ndarray:
    """Who opens each of ``n`` negotiations: drawn (``OPEN_RANDOM``) or one side for all."""
    if mode == OPEN_RANDOM:
        return rng.integers(0, 2, n)
    return np.full(n, mode, dtype=np.int64)


@njit(cache=True, inline="always")
def deal_reservations(ps: np.ndarray, pb: np.ndarray, deal: np.ndarray, res_s: np.ndarray,
                      res_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Seller's cost and the Buyer's value of each deal of pairs (``ps[i]``, ``pb[i]``),
    in pair order (what the ledger's margins read)."""
    k = 0
    for d in deal:
        k += d
    costs, values = np.empty(k), np.empty(k)
    j = 0
    for i in range(ps.size):
        if deal[i]:
            costs[j], values[j] = res_s[ps[i]], res_b[pb[i]]
            j += 1
    return costs, values


@njit(cache=True)
def settle_deals(ps: np.ndarray, pb: np.ndarray, level: np.ndarray, n_moves: np.ndarray,
                 grid: tuple[float, float, float], pressure: Pressure,
                 sellers: tuple[np.ndarray, ...], buyers: tuple[np.ndarray, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pay every deal of pairs (``ps[i]``, ``pb[i]``) at its level's price; mark both traded.

    ``grid``: ``(lo, step, span)``, level ``k``'s price is ``lo + (k - 1) step``
    and ``span`` the price range (a surplus of 1 in money);
    ``sellers``/``buyers``: each side's ``(reservation, cash, earnings, trades,
    traded)``, changed in place.

    Returns each pair's price (NaN without a deal), whether it dealt, and the
    Sellers' (price - cost) and Buyers' (value - price) gains, one per deal.
    ``pressure``: the game's time pressure. A deal on the ``k``-th offer
    (ended at move ``k + 1``, ``n_moves[i] = k + 2``) is worth to each side
    what :func:`market.game.moves.worth` says of its gain, the costs per offer
    in money (their share of ``span``): the price still changes hands in full,
    but the surplus a side earns, and so a learner's reward and the market's
    efficiency, shrink with the delay (a negotiation that fails earns nothing,
    whatever it cost).
    """
    grid_lo, grid_step, span = grid
    res_s, cash_s, earn_s, trades_s, traded_s = sellers
    res_b, cash_b, earn_b, trades_b, traded_b = buyers
    n = ps.size
    prices = np.full(n, np.nan)
    deal = level > 0
    k = int(deal.sum())
    gain_s, gain_b = np.empty(k), np.empty(k)
    j = 0
    for i in range(n):
        if not deal[i]:
            continue
        s, b = ps[i], pb[i]
        p = grid_lo + (float(level[i]) - 1.0) * grid_step
        prices[i] = p
        k = n_moves[i] - 2  # the offer accepted, counted from 0
        gain_s[j] = moves.worth(p - res_s[s], SELLER, k, pressure, span)
        gain_b[j] = moves.worth(res_b[b] - p, BUYER, k, pressure, span)
        cash_s[s] += p
        cash_b[b] -= p
        earn_s[s] += gain_s[j]
        earn_b[b] += gain_b[j]
        trades_s[s] += 1
        trades_b[b] += 1
        traded_s[s] = True
        traded_b[b] = True
        j += 1
    return prices, deal, gain_s, gain_b


@njit(cache=True)
def pay(deal: np.ndarray, gain_s: np.ndarray, gain_b: np.ndarray, span: float,
            team_s: np.ndarray, team_b: np.ndarray, team_size: np.ndarray) -> np.ndarray:
    """(2, pairs) rewards by side: the gain over the price range ``span``, 0 without a deal.

    ``team_size`` non-empty (a common wallet): each trader gets its team's
    reward of the step per member instead of its own; ``team_s``/``team_b``
    are the pairs' teams.
    """
    n = deal.size
    reward = np.zeros((2, n))
    j = 0
    for i in range(n):
        if deal[i]:
            reward[SELLER, i] = gain_s[j] / span
            reward[BUYER, i] = gain_b[j] / span
            j += 1
    if team_size.size:
        pooled = np.zeros(team_size.size)
        for i in range(n):
            pooled[team_s[i]] += reward[SELLER, i]
        for i in range(n):
            pooled[team_b[i]] += reward[BUYER, i]
        for i in range(n):
            reward[SELLER, i] = pooled[team_s[i]] / max(team_size[team_s[i]], 1)
            reward[BUYER, i] = pooled[team_b[i]] / max(team_size[team_b[i]], 1)
    return reward


def learn(populations: Sequence[Sequence[Strategy]], books: Sequence[TraderArrays],
          ps: np.ndarray, pb: np.ndarray, record: BatchRecord, reward: np.ndarray,
          time_left: np.ndarray | None) -> None:
    """Every learning population of each side learns from the rows its members played."""
    for side, idx in ((SELLER, ps), (BUYER, pb)):
        book = books[side]
        group = book.strategy[idx]
        for g, strat in enumerate(populations[side]):
            if not strat.classifier.get("learns", False):
                continue
            rows = np.flatnonzero(group == g)
            if rows.size == 0:
                continue
            member = book.member[idx[rows]]
            strat.learn(record, rows, member, reward[side, rows],
                        None if time_left is None else time_left[rows])
