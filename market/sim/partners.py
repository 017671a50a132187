"""The pairing rules of bilateral bargaining, compiled, and what a market's Buyers remember.

The rules are stated in :mod:`market.sim.matching` (the registry, and its table);
here is what runs them: :class:`Partners` (a market's rule and its Buyers'
preferences, kept by the market's state), the compiled rounds that
:func:`market.sim.kernel.market_step` calls (:func:`first_round`,
:func:`next_round`, :func:`remember`, :func:`new_period`), and the period's
figures (:func:`figures`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from market.compiled.jit import njit
from market.game import numeric
from market.sim import exchange
from market.sim.matching import LOYALTY, MATCHINGS, SERVE_LOYAL_FIRST, SERVICES
from market.sim.network import Network

#: a Buyer is loyal when her order parameter ``y`` is at least this (one Seller holds
#: almost all of her preference: with two Sellers, at least 94.7% of it)
LOYAL_Y = 0.9


@dataclass
class Partners:
    """A market's pairing rule and what its Buyers remember (empty arrays under ``random``).

    ``rule``: ``(code, beta, gamma, service)`` as the compiled step takes it;
    ``arrays``: ``(ids, weight, pending, gain, price, odds, start, neighbours,
    loyal_to)``: each
    Buyer's remembered Sellers (``-1``: an empty place) and their ``J``, the Seller she
    dealt with this period (``-1``: none) and what it earned her, each Seller's price this
    period (NaN: no sale), each Buyer's choice weights as the period's preferences give
    them (:func:`_odds`: made once a period, not at every visit), and the Sellers each
    Buyer may meet (:class:`~market.sim.network.Network`; both empty: everyone), and
    the Seller each Buyer is loyal to (:func:`loyal_rows`; -1: none);
    ``base``: the Buyers' earnings when the period opened. Random pairs on a network are
    visits too, every Buyer's weights even (nobody remembered).
    """

    rule: tuple[int, float, float, int]
    arrays: tuple[np.ndarray, ...]
    base: np.ndarray

    @classmethod
    def build(cls, matching: str, beta: float, gamma: float, memory: int, service: str,
              n_sellers: int, n_buyers: int, network: Network | None = None) -> Partners:
        """A market's partners as its parameters say, nobody remembered yet."""
        code = MATCHINGS[matching].code
        visits = code == LOYALTY or network is not None
        nb, ns = (n_buyers, n_sellers) if visits else (0, 0)
        m = memory if code == LOYALTY else 1
        odds = np.zeros((nb, m + 1))
        # nobody remembered: every Seller she may meet at weight exp(0)
        odds[:, m] = ns if network is None else np.diff(network.start)
        start, neighbours = ((np.zeros(0, np.int64), np.zeros(0, np.int64)) if network is None
                             else (network.start, network.sellers))
        arrays = (np.full((nb, m), -1, np.int64), np.zeros((nb, m)), np.full(nb, -1, np.int64),
                  np.zeros(nb), np.full(ns, np.nan), odds, start, neighbours,
                  np.full(nb, -1, np.int64))
        return cls((code, float(beta), float(gamma), SERVICES[service]), arrays, np.zeros(nb))

    @property
    def loyalty(self) -> bool:
        return self.rule[0] == LOYALTY

    @property
    def compiled(self) -> tuple[tuple, tuple]:
        """``(rule, arrays)``: the compiled step's last two arguments."""
        return self.rule, self.arrays

    def open_period(self, first: bool, earnings: np.ndarray) -> None:
        """A period opens: preferences take in the period that closed; prices start again."""
        if not self.loyalty:
            return
        if not first:
            new_period(self.rule, self.arrays)
        self.base = earnings.copy()

    def prefer(self, buyers: np.ndarray, seller: int, j: float) -> None:
        """Give ``buyers`` the preference ``j`` for ``seller`` now (an experiment's start: Buyers
        already loyal), their choice weights made again."""
        ids, weight = self.arrays[0], self.arrays[1]
        for b in np.atleast_1d(buyers):
            row = ids[b]
            at = np.flatnonzero(row == seller)
            m = int(at[0]) if at.size else int(np.flatnonzero(row < 0)[0])
            row[m], weight[b, m] = seller, j
        refresh(self.rule, self.arrays)

    def figures(self, earnings: np.ndarray, n_sellers: int) -> dict[str, float]:
        """The period's partner figures (module docstring), read as it closes."""
        return figures(self.arrays, earnings - self.base, n_sellers)


def order_parameter(weight: np.ndarray, n_sellers: int | np.ndarray) -> np.ndarray:
    """Each Buyer's ``y = sum J^2 / (sum J)^2`` over her remembered Sellers (``1/n_sellers``
    without any preference yet: she chooses among all alike; on a network ``n_sellers`` is
    each Buyer's own count of neighbours): the one sum that also says whom a Buyer is loyal
    to (:func:`_loyal_to`)."""
    n = np.broadcast_to(np.asarray(n_sellers, dtype=float), (len(weight),))
    return _order_parameters(np.ascontiguousarray(weight, dtype=float), np.ascontiguousarray(n))


def figures(arrays: tuple, earned: np.ndarray, n_sellers: int | np.ndarray
            ) -> dict[str, float]:
    """WKH's order parameter and the loyalty, dispersion and earnings figures of a period:
    ``earned``, each Buyer's earnings in it. On a network, over the Buyers who have a
    partner there (a Buyer with none neither searches nor is loyal)."""
    weight, price, start = arrays[1], arrays[4], arrays[6]
    if start.size:
        reach = np.diff(start)
        weight, earned, n_sellers = weight[reach > 0], earned[reach > 0], reach[reach > 0]
    y = order_parameter(weight, n_sellers)
    loyal = y >= LOYAL_Y
    sold = price[~np.isnan(price)]
    mean = float(sold.mean()) if sold.size else math.nan
    sd = float(sold.std(ddof=1)) if sold.size > 1 else math.nan
    return {
        "mean_y": float(y.mean()) if y.size else math.nan,
        "loyal_share": float(loyal.mean()) if y.size else math.nan,
        "sellers_per_buyer": float((1.0 / y).mean()) if y.size else math.nan,
        "seller_price_sd": sd,
        "seller_price_cv": sd / mean if mean else math.nan,
        "loyal_earnings": float(earned[loyal].mean()) if loyal.any() else math.nan,
        "searching_earnings": float(earned[~loyal].mean()) if (~loyal).any() else math.nan,
    }


#: the period table's partner columns under ``loyalty`` (:func:`figures`' keys), with their
#: words where a person reads them
LABELS = {
    "mean_y": "Buyers' order parameter y (mean; 1: loyal)",
    "loyal_share": f"loyal Buyers (y >= {LOYAL_Y:g})",
    "sellers_per_buyer": "Sellers per Buyer (mean 1/y)",
    "seller_price_sd": "price dispersion across Sellers (sd)",
    "seller_price_cv": "price dispersion across Sellers (cv)",
    "loyal_earnings": "a loyal Buyer's earnings in the period",
    "searching_earnings": "a searching Buyer's earnings in the period",
}
COLUMNS = tuple(LABELS)


# --- the compiled rules: :func:`market.sim.kernel.market_step` calls them ---------------------

@njit(cache=True)
def new_period(rule, arrays):  # noqa: ANN001, ANN201
    """``J <- (1 - gamma) J + pi`` for every Buyer (the period that closed: ``pending``,
    ``gain``): a Seller she remembers gains ``pi``; a new one takes the first empty place, or
    else the place of the smallest ``J`` if ``pi`` is larger. A Buyer's remembered Sellers
    thus fill her row from the left, none forgotten but by another taking its place
    (:func:`_known`). No Seller has sold yet."""
    beta, gamma = rule[1], rule[2]
    ids, weight, pending, gain, price, odds = arrays[:6]
    for b in range(ids.shape[0]):
        row, w = ids[b], weight[b]
        known = _known(row)
        for m in range(known):
            w[m] *= 1.0 - gamma
        s = pending[b]
        if s >= 0:
            at, low = -1, np.inf
            for m in range(known):
                if row[m] == s:
                    at = m
                    break
                if w[m] < low:
                    at, low = m, w[m]
            if at >= 0 and row[at] == s:
                w[at] += gain[b]
            elif known < row.size:
                row[known], w[known] = s, gain[b]
                known += 1
            elif w[at] < gain[b]:
                row[at], w[at] = s, gain[b]
            pending[b], gain[b] = -1, 0.0
        _odds(row, w, known, odds[b], beta, _reach(arrays, b, price.size))
        arrays[8][b] = _loyal_to(row, w, known)
    for j in range(price.size):
        price[j] = np.nan


@njit(cache=True)
def refresh(rule, arrays):  # noqa: ANN001, ANN201
    """Every Buyer's choice weights made again from her preferences (:func:`_odds`)."""
    ids, weight, price, odds = arrays[0], arrays[1], arrays[4], arrays[5]
    for b in range(ids.shape[0]):
        known = _known(ids[b])
        _odds(ids[b], weight[b], known, odds[b], rule[1], _reach(arrays, b, price.size))
        arrays[8][b] = _loyal_to(ids[b], weight[b], known)


@njit(cache=True, inline="always")
def _known(row):  # noqa: ANN001, ANN201
    """How many Sellers a Buyer remembers: they fill her row from the left
    (:func:`new_period`), the first empty place (``-1``) ends them."""
    known = 0
    while known < row.size and row[known] >= 0:
        known += 1
    return known


@njit(cache=True, inline="always")
def _y(w):  # noqa: ANN001, ANN201
    """A Buyer's order parameter ``y = sum J^2 / (sum J)^2`` from her row of ``J`` (0 at an
    empty place), or -1 if she has no preference yet."""
    s1, s2 = 0.0, 0.0
    for m in range(w.size):
        s1 += w[m]
        s2 += w[m] * w[m]
    return s2 / (s1 * s1) if s1 > 0.0 else -1.0


@njit(cache=True)
def _order_parameters(weight, n_sellers):  # noqa: ANN001, ANN201
    y = np.empty(weight.shape[0])
    for b in range(y.size):
        y[b] = _y(weight[b])
        if y[b] < 0.0:
            y[b] = 1.0 / n_sellers[b]
    return y


@njit(cache=True, inline="always")
def _loyal_to(row, w, known):  # noqa: ANN001, ANN201
    """The Seller a Buyer is loyal to: the one she prefers most, when her order parameter
    :func:`_y` is at least :data:`LOYAL_Y` (the figures' loyal Buyer; one who has not dealt
    yet is loyal to nobody); -1 if none."""
    if _y(w) < LOYAL_Y:
        return -1
    best, top = -1, -np.inf
    for m in range(known):
        if w[m] > top:
            best, top = row[m], w[m]
    return best


@njit(cache=True)
def loyal_rows(arrays, ps, pb):  # noqa: ANN001, ANN201
    """Whether each pair ``(ps[i], pb[i])`` is a loyal one (1: the Buyer is loyal to this
    Seller, :func:`_loyal_to`, as the period opened), what a learner with ``loyal_state``
    sees (:mod:`market.game.dispatch`'s seat); all 0 without partner choice."""
    loyal_to = arrays[8]
    out = np.zeros(ps.size, np.int64)
    if loyal_to.size == 0:
        return out
    for i in range(ps.size):
        out[i] = 1 if loyal_to[pb[i]] == ps[i] else 0
    return out


@njit(cache=True, inline="always")
def _reach(arrays, b, n_sellers):  # noqa: ANN001, ANN201
    """How many Sellers Buyer ``b`` may meet: her neighbours on a network, else all."""
    start = arrays[6]
    return n_sellers if start.size == 0 else start[b + 1] - start[b]


@njit(cache=True, inline="always")
def _odds(row, w, known, odds, beta, n_sellers):  # noqa: ANN001, ANN201
    """A Buyer's choice weights: ``exp(beta J - top)`` for each of the ``known`` Sellers she
    remembers (0 for an empty place), and last their sum with ``exp(-top)`` for each of the
    others she may meet (``n_sellers`` in all; ``top``: the largest ``beta J``, or 0, so
    that nothing overflows)."""
    top = 0.0
    for m in range(known):
        top = max(top, beta * w[m])
    total = (n_sellers - known) * numeric.exp1(-top)
    for m in range(known):
        odds[m] = numeric.exp1(beta * w[m] - top)
        total += odds[m]
    for m in range(known, row.size):
        odds[m] = 0.0
    odds[row.size] = total


@njit(cache=True, inline="always")
def _choose(ids, odds, b, n_sellers, allowed, rng):  # noqa: ANN001, ANN201
    """The Seller Buyer ``b`` visits, by her choice weights (:func:`_odds`): one she
    remembers, or uniformly one of the others she may meet (``allowed``: her ``n_sellers``
    neighbours on a network, from ``allowed[0]``; empty: every Seller). Rows are read in
    place: a view per visit cost a reference count's two atomic updates."""
    m_size = ids.shape[1]
    u = rng.random() * odds[b, m_size]
    known = 0
    while known < m_size and ids[b, known] >= 0:  # remembered Sellers fill the row (_known)
        u -= odds[b, known]
        if u < 0.0:
            return ids[b, known]
        known += 1
    if known >= n_sellers:  # rounding left a crumb: the last remembered
        return ids[b, known - 1]
    while True:  # one of the Sellers she does not remember, uniformly
        s = numeric.integer(rng, 0, n_sellers)
        if allowed[1] >= 0:
            s = allowed[0][allowed[1] + s]
        taken = False
        for m in range(known):
            taken |= ids[b, m] == s
        if not taken:
            return s


@njit(cache=True, inline="always")
def _weight_of(ids, weight, b, s):  # noqa: ANN001, ANN201
    for m in range(ids.shape[1]):
        if ids[b, m] == s:
            return weight[b, m]
    return 0.0


@njit(cache=True)
def first_round(rule, arrays, s_traded, b_traded, rng):  # noqa: ANN001, ANN201
    """A step's first round of pairs ``(ps, pb)`` and the step's queues for :func:`next_round`
    ``(start, order, at, live, n_live)``: Seller ``s``'s visitors are
    ``order[start[s]:start[s + 1]]``, in the order she serves them, ``at[s]`` the next;
    ``live[:n_live[0]]`` the Sellers who may still have one. ``random``:
    :func:`exchange.pair`, no queue."""
    code, service = rule[0], rule[3]
    n_s = s_traded.size
    if code != LOYALTY and arrays[6].size == 0:
        ps, pb = exchange.pair(s_traded, b_traded, rng)
        none = np.zeros(0, np.int64)
        return ps, pb, (np.zeros(1, np.int64), none, none, none, np.zeros(1, np.int64))
    ids, weight, odds = arrays[0], arrays[1], arrays[5]
    free_b = numeric.permutation(rng, np.flatnonzero(~b_traded))
    chosen = np.empty(free_b.size, np.int64)
    start = np.zeros(n_s + 1, np.int64)
    n_visits = 0
    starts, neighbours = arrays[6], arrays[7]
    network = starts.size > 0
    for i in range(free_b.size):
        b = free_b[i]
        reach = _reach(arrays, b, n_s)
        chosen[i] = -1 if reach == 0 else _choose(
            ids, odds, b, reach, (neighbours, starts[b] if network else -1), rng)
        if chosen[i] >= 0:  # a Buyer with no partner on the network visits nobody
            start[chosen[i] + 1] += 1
            n_visits += 1
    for s in range(n_s):
        start[s + 1] += start[s]
    at = start[:-1].copy()
    order = np.empty(n_visits, np.int64)
    for i in range(free_b.size):  # grouped by Seller, each group in the random visiting order
        if chosen[i] >= 0:
            order[at[chosen[i]]] = free_b[i]
            at[chosen[i]] += 1
    if service == SERVE_LOYAL_FIRST:
        for s in range(n_s):
            group = order[start[s]:start[s + 1]]
            if group.size > 1:
                keys = np.empty(group.size)
                for i in range(group.size):
                    keys[i] = -_weight_of(ids, weight, group[i], s)
                order[start[s]:start[s + 1]] = group[_stable_order(keys)]
    live = np.flatnonzero(start[1:] > start[:-1])  # the Sellers someone visits
    queue = (start, order, start[:-1].copy(), live, np.full(1, live.size, np.int64))
    ps, pb = next_round(queue, s_traded)
    return ps, pb, queue


@njit(cache=True)
def _stable_order(keys):  # noqa: ANN001, ANN201
    """The indices that sort ``keys`` ascending, equal keys in their order: a bottom-up merge
    sort (numpy's stable ``argsort``, compiled by numba, cost seconds of cold compile)."""
    n = keys.size
    idx, tmp = np.arange(n), np.empty(n, np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if keys[idx[j]] < keys[idx[i]]:
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i, k = i + 1, k + 1
            while j < hi:
                tmp[k] = idx[j]
                j, k = j + 1, k + 1
        idx, tmp = tmp, idx
        width *= 2
    return idx


@njit(cache=True)
def next_round(queue, s_traded):  # noqa: ANN001, ANN201
    """The next visitor of every Seller who still holds her unit and has one waiting (the
    queue's ``live`` Sellers, the first ``n_live`` of them, kept to those)."""
    start, order, at, live, n_live = queue
    kept = 0
    for i in range(n_live[0]):
        s = live[i]
        if not s_traded[s] and at[s] < start[s + 1]:
            live[kept] = s
            kept += 1
    n_live[0] = kept
    ps, pb = np.empty(kept, np.int64), np.empty(kept, np.int64)
    for i in range(kept):
        s = live[i]
        ps[i], pb[i] = s, order[at[s]]
        at[s] += 1
    return ps, pb


@njit(cache=True)
def step_buffers(queue, moves):  # noqa: ANN001, ANN201
    """Room for a step's rounds (at most a visit per Buyer; none under random pairs, whose one
    round is the step): its pairs, first movers, levels and moves; prices and gains; deals;
    actions (``moves`` a negotiation); and how many pairs and deals are kept."""
    cap = queue[1].size
    return (np.empty((5, cap), np.int64), np.empty((3, cap)), np.empty(cap, np.bool_),
            np.empty((cap, moves), np.int32), np.zeros(2, np.int64))


@njit(cache=True)
def keep_round(kept, pairs, money, deal, actions):  # noqa: ANN001, ANN201
    """A round's pairs ``(ps, pb, first, level, n_moves)``, ``money`` ``(prices, gain_s,
    gain_b)`` (gains one per deal), deals and actions, after the step's earlier rounds."""
    step_i, step_f, step_deal, step_actions, at = kept
    at_p, at_g = at[0], at[1]
    n = pairs[0].size
    for r in range(5):
        row = pairs[r]
        for i in range(n):
            step_i[r, at_p + i] = row[i]
    for i in range(n):
        step_f[0, at_p + i], step_deal[at_p + i] = money[0][i], deal[i]
        for c in range(step_actions.shape[1]):
            step_actions[at_p + i, c] = actions[i, c]
    for i in range(money[1].size):
        step_f[1, at_g + i], step_f[2, at_g + i] = money[1][i], money[2][i]
    at[0], at[1] = at_p + n, at_g + money[1].size


@njit(cache=True)
def kept_step(kept):  # noqa: ANN001, ANN201
    """The step's rounds, kept (:func:`keep_round`), as one round's arrays."""
    step_i, step_f, step_deal, step_actions, at = kept
    at_p, at_g = at[0], at[1]
    return ((step_i[0, :at_p], step_i[1, :at_p], step_i[2, :at_p], step_i[3, :at_p],
             step_i[4, :at_p]), (step_f[0, :at_p], step_f[1, :at_g], step_f[2, :at_g]),
            step_deal[:at_p], step_actions[:at_p])


@njit(cache=True)
def remember(rule, arrays, ps, pb, prices, gain_b, span):  # noqa: ANN001, ANN201
    """A round's deals: each Buyer's Seller and her gain (a share of ``span``), each Seller's
    price (nothing under ``random``)."""
    if rule[0] != LOYALTY:
        return
    pending, gain, price = arrays[2], arrays[3], arrays[4]
    j = 0
    for i in range(ps.size):
        if not np.isnan(prices[i]):
            pending[pb[i]], gain[pb[i]] = ps[i], gain_b[j] / span
            price[ps[i]] = prices[i]
            j += 1
