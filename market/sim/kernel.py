"""The market step in one compiled call: pair, negotiate, settle, pay, learn.

A template, compiled with the strategies' decisions by :mod:`strategies.compiled`
(see :mod:`market.game.dispatch`): :func:`market_step` composes the market's
own compiled rules (:func:`~market.sim.exchange.pair`,
:func:`~market.sim.exchange.openers`, :func:`~market.sim.exchange.settle_deals`,
:func:`~market.sim.exchange.pay`) with the game's negotiation loop
(:func:`market.game.loops.negotiate_rows`) and the learners' updates, on the
model's own arrays. :mod:`market.sim.engine` calls it.

Arguments are grouped so that a new per-trader array is one edit: ``rules``
the market's :class:`Rules` as a plain tuple (:meth:`Rules.plain`), named again
inside by :func:`named` (numba's dispatcher types a named tuple passed from
Python at every call, a plain one for nothing); a
side ``(reservation, strategy, member, team, cash, earnings, trades, traded,
lo, hi)`` (:data:`SIDE_FIELDS`, the order of
:class:`~market.sim.agents.TraderArrays` and the acceptable levels).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from market.compiled.jit import borrowed, generator, njit
from market.game.buffers import floats, ints
from market.game.dispatch import learn  # bound when generated
from market.game.loops import negotiate_rows  # bound when generated
from market.game.pressure import Pressure
from market.game.rules import SELLER
from market.sim import exchange, ledger
from market.sim import partners as matching

#: a side's arrays, in the order :func:`market_step` takes them
SIDE_FIELDS = ("reservation", "strategy", "member", "team", "cash", "earnings", "trades",
               "traded", "lo", "hi")


#: the columns of :func:`market_step`'s rows before the Sellers' earnings (the books read them)
ROW_SUMS = ledger.ROW_SUMS


class Rules(NamedTuple):
    """The market's rules, as every compiled step reads them: the game's sizes (``prices`` P,
    ``rounds`` T), who opens (``open_mode``: a side, or drawn per pair), the price grid
    (level ``k`` costs ``grid_lo + (k - 1) grid_step``; ``span``, the price range, is a
    surplus of 1) and the game's time pressure."""

    prices: int
    rounds: int
    open_mode: int
    grid_lo: float
    grid_step: float
    span: float
    pressure: Pressure

    def plain(self) -> tuple:
        """What a compiled entry point takes: the same fields as a plain tuple (:func:`named`
        makes them a ``Rules`` again inside)."""
        return (*self[:-1], tuple(self.pressure))


@njit(cache=True, inline="always")
def named(rules):  # noqa: ANN001, ANN201
    """The :class:`Rules` of an entry point's plain ``rules`` (:meth:`Rules.plain`): the one
    place their order is read."""
    P, T, open_mode, grid_lo, grid_step, span, pressure = rules
    return Rules(P, T, open_mode, grid_lo, grid_step, span, Pressure(*pressure))


@njit(cache=True)
def market_step(k, rules, clock, centre, sellers, buyers, team_size, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
                draws, partners):
    """Up to ``k`` market steps in one call (each: pair, negotiate, settle, pay, learn), with
    what the model records of each: a single step (``k`` = 1,
    :meth:`~market.sim.model.MarketModel.step`) or a period's steps at once
    (:meth:`~market.sim.model.MarketModel.run`: Python's work around a compiled call costs
    a small market as much as the step itself).

    ``clock``: ``(r0, K, with_clock)``, the first step's place in a period of ``K``
    steps and whether learners see the clock; the steps may run on into the next
    periods, each opening with every trader holding its unit again (what
    :meth:`~market.sim.state.Market.open_period` does when nothing else changes between
    periods: :func:`~market.sim.engine.across_periods`); ``draws``: the model's generator,
    or its :func:`~market.compiled.jit.rng_handle`; ``partners``: the pairing rule and what
    the Buyers remember (:attr:`market.sim.partners.Partners.compiled`): a step is rounds of
    pairs (:mod:`market.sim.matching`). Returns how many
    steps were made (fewer than ``k`` after an illegal action, whose move and population come
    last, -1 otherwise); one row per step: its pairs, its
    :func:`~market.sim.ledger.settle_sums` (:data:`ROW_SUMS` columns in all),
    then the Seller strategies' summed earnings, then their traders, then the
    Sellers' mean, then the same of the Buyers (:func:`~market.sim.ledger.group_means`,
    what the model reads after a step: :func:`~market.sim.ledger.read_rows`); the deals'
    levels, step after step (``offsets[j]`` where step ``j``'s begin); and the last
    step's packed results (:func:`packed`) and actions.
    """
    rng = generator(draws)
    match, partners = partners
    sellers, buyers, team_size, kinds, st = borrowed((sellers, buyers, team_size, kinds, st))
    r0, K, with_clock = clock
    rules = named(rules)
    P, T, pressure = rules.prices, rules.rounds, rules.pressure
    s_res, s_strategy, s_member, s_team, s_cash, s_earn, s_trades, s_traded, s_lo, s_hi = sellers
    b_res, b_strategy, b_member, b_team, b_cash, b_earn, b_trades, b_traded, b_lo, b_hi = buyers
    n_s, n_b = n_groups_s, kinds.size - n_groups_s
    rows, levels, offsets = ledger.new_rows(k, r0, K, kinds.size, s_strategy.size,
                                            b_strategy.size)
    packed_j = floats(8, 0)
    actions_j = np.full((0, 2 * T), -1, np.int32)
    for j in range(k):  # the step's body written here, not inlined from a function: numba's
        r = (r0 + j) % K  # inlining cost 3 s of cold compile
        if r == 0 and j > 0:  # a new period
            exchange.hold_units(s_traded, b_traded)
        ps, pb, queue = matching.first_round(match, partners, s_traded, b_traded, rng)
        kept = matching.step_buffers(queue, 2 * T)  # a round's pairs, kept for the step's row
        while True:  # rounds: one under random pairs; a Seller's next visitor while she holds
            n = ps.size  # her unit under loyalty (market.sim.matching)
            first = exchange.openers(n, rules.open_mode, rng)
            time_left = ints(n, K - r if with_clock else -1)
            loyal = matching.loyal_rows(partners, ps, pb)
            actions, level, n_moves, bad, bad_g = negotiate_rows(
                (P, T), first, (s_strategy[ps], s_member[ps], s_lo[ps], s_hi[ps]),
                (b_strategy[pb], b_member[pb], b_lo[pb], b_hi[pb]), time_left, loyal, kinds,
                n_groups_s, st, rng, pressure)
            if bad >= 0:
                zeros = floats(3, n)
                packed_j = packed(ps, pb, first, level, n_moves, zeros[0], zeros[1, :0],
                                  zeros[2, :0])
                return j, rows, levels, offsets, packed_j, actions, bad, bad_g
            prices, deal, gain_s, gain_b = exchange.settle_deals(
                ps, pb, level, n_moves, (rules.grid_lo, rules.grid_step, rules.span), pressure,
                (s_res, s_cash, s_earn, s_trades, s_traded),
                (b_res, b_cash, b_earn, b_trades, b_traded))
            reward = exchange.pay(deal, gain_s, gain_b, rules.span, s_team[ps], b_team[pb],
                                  team_size)
            learn_all((P, T), (ps, pb), (s_strategy, b_strategy), (s_member, b_member),
                      (actions, first, n_moves, level), reward, (time_left, loyal), kinds,
                      n_groups_s, st)
            if kept[0].shape[1] == 0:  # random pairs: one round, the step's own arrays
                break
            matching.remember(match, partners, ps, pb, prices, gain_b, rules.span)
            matching.keep_round(kept, (ps, pb, first, level, n_moves),
                                (prices, gain_s, gain_b), deal, actions)
            ps, pb = matching.next_round(queue, s_traded)
            if ps.size == 0:
                (ps, pb, first, level, n_moves), (prices, gain_s, gain_b), deal, actions = \
                    matching.kept_step(kept)
                break
        actions_j = actions
        packed_j = packed(ps, pb, first, level, n_moves, prices, gain_s, gain_b)
        sums = settled_sums((ps, pb, deal), (prices, gain_s, gain_b), s_res, b_res, centre)
        ledger.record_step(rows, j, sums, packed_j, levels, offsets,
                           ((s_strategy, s_earn, n_s), (b_strategy, b_earn, n_b)))
    return k, rows, levels, offsets, packed_j, actions_j, -1, -1


@njit(cache=True, inline="always")
def settled_sums(pairs, settled, s_res, b_res, centre):  # noqa: ANN001, ANN201
    """The ledger's :func:`~market.sim.ledger.settle_sums` of a settled step, computed where
    it was settled: ``pairs`` ``(ps, pb, deal)``, ``settled`` ``(prices, gain_s, gain_b)``."""
    ps, pb, deal = pairs
    costs, values = exchange.deal_reservations(ps, pb, deal, s_res, b_res)
    return ledger.settle_sums(settled[0], settled[1], settled[2], costs, values, centre)


@njit(cache=True, inline="always")
def no_sums():  # noqa: ANN201
    """The sums of a step that settled nothing (typed as :func:`settled_sums`)."""
    none = floats(1, 0)[0]
    return ledger.settle_sums(none, none, none, none, none, np.nan)


@njit(cache=True, inline="always")
def learn_all(game, pairs, strategy, member, record, reward, sees, kinds, n_groups_s,  # noqa: ANN001, ANN201
              st):
    """Every learning population learns from the rows of ``record`` its members played:
    ``pairs`` ``(ps, pb)`` index each side's traders, ``strategy`` and ``member`` are each
    side's arrays, ``reward`` ``(2, n)``; populations in order, Sellers' first, each one's
    rows ascending. ``sees``: ``(time_left, loyal)`` per row, as the movers saw them."""
    config = st[3]
    time_left, loyal = sees
    n_groups = kinds.size
    n = pairs[0].size
    for s in range(2):
        idx = pairs[s]
        own_strategy = strategy[s]
        g0, g1 = (0, n_groups_s) if s == SELLER else (n_groups_s, n_groups)
        for g in range(g0, g1):
            if config[g, 0] == 0:
                continue
            k = 0
            for i in range(n):
                k += own_strategy[idx[i]] == g - g0
            if k == 0:
                continue
            rows = ints(k, 0)
            j = 0
            for i in range(n):
                if own_strategy[idx[i]] == g - g0:
                    rows[j] = i
                    j += 1
            learn(kinds[g], s, game, rows, record, member[s][idx[rows]], reward[s, rows],
                  time_left[rows], loyal[rows], st, g)


@njit(cache=True, inline="always")
def packed(ps, pb, first, level, n_moves, prices, gain_s, gain_b):  # noqa: ANN001, ANN201
    """One step's results as one (8, n) float array, as few as numba must hand back (each
    returned array costs a call back into Python): rows ps, pb, first, level, n_moves,
    prices, and the deals' gains (Seller, Buyer) at the front of their rows."""
    n = ps.size
    out = floats(8, n)
    for i in range(n):
        out[0, i], out[1, i], out[2, i] = ps[i], pb[i], first[i]
        out[3, i], out[4, i], out[5, i] = level[i], n_moves[i], prices[i]
    for j in range(gain_s.size):
        out[6, j], out[7, j] = gain_s[j], gain_b[j]
    return out
