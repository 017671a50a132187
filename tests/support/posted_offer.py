"""A posted-offer market (Plott and Smith 1978): Sellers post asks, Buyers take them or leave them.

A fourth institution, sketched as its own file: copied into
``market/sim/institutions/`` it is registered by its name, ``posted``, and
every command, the model, the view and the bench take it
(``tests/sim/test_new_institution.py`` does so in a copy of the package).

Each step every Seller still holding her unit posts an ask through her rule
(an opening offer: she sees no bid), in the order of the Sellers' places;
then the Buyers still holding theirs come in a random order, each seeing the
lowest ask, and accept it (a trade at that ask, with the Seller who posted
it first at that level) or leave it. What a trade records, settles and
teaches is what the double auction's do (:func:`market.sim.auction.cda_round`).
"""

from __future__ import annotations

import numpy as np

from market.compiled import jit
from market.compiled.jit import njit
from market.game import numeric
from market.game.buffers import floats
from market.game.rules import BUYER, SELLER
from market.sim import exchange
from market.sim.auction import (  # bound when generated
    _decide_one,
    _post,
    _refused,
    _scratch,
    _settled,
    _withdraw,
    best,
    clear_book,
    on_tape,
)
from market.sim.institutions import Institution
from market.sim.institutions.cda import standing
from market.sim.kernel import named  # bound when generated
from market.sim.ledger import new_rows, record_step


@njit(cache=True)
def posted_step(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
                draws, book):
    """``k`` steps of the posted-offer market, with the convention of every institution's
    step (:func:`market.sim.kernel.market_step`'s arguments, the book last, and its rows)."""
    r0, K = clock[0], clock[1]
    s_strategy, s_earn, s_traded = sellers[1], sellers[5], sellers[7]
    b_strategy, b_earn, b_traded = buyers[1], buyers[5], buyers[7]
    rows, levels, offsets = new_rows(k, r0, K, kinds.size, s_strategy.size, b_strategy.size)
    packed_j, actions_j = floats(8, 0), np.full((0, 2), -1, np.int32)
    for j in range(k):
        r = (r0 + j) % K
        if r == 0 and j > 0:  # a new period: every unit back, the book empty
            exchange.hold_units(s_traded, b_traded)
            clear_book(book)
        packed_j, actions_j, bad, bad_g, sums = posted_round(
            rules, (r, K), centre, sellers, buyers, book, pooled, kinds, n_groups_s, st, draws)
        if bad >= 0:
            return j, rows, levels, offsets, packed_j, actions_j, bad, bad_g
        record_step(rows, j, sums, packed_j, levels, offsets,
                    ((s_strategy, s_earn, n_groups_s),
                     (b_strategy, b_earn, kinds.size - n_groups_s)))
    return k, rows, levels, offsets, packed_j, actions_j, -1, -1


@njit(cache=True)
def posted_round(rules, clock, centre, sellers, buyers, book, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
                 draws):
    """One step of the posted-offer market (module docstring), on the model's arrays."""
    rng = jit.generator(draws)
    sellers, buyers, book, pooled, kinds, st = jit.borrowed(
        (sellers, buyers, book, pooled, kinds, st))
    rules = named(rules)
    P, T = rules.prices, rules.rounds
    s_strategy, s_member, s_traded, s_lo, s_hi = (sellers[1], sellers[2], sellers[7],
                                                  sellers[8], sellers[9])
    b_strategy, b_member, b_traded, b_lo, b_hi = (buyers[1], buyers[2], buyers[7], buyers[8],
                                                  buyers[9])
    seen, tape = book[5], book[7]
    scratch = _scratch()
    free_s = np.flatnonzero(~s_traded)
    free_b = numeric.permutation(rng, np.flatnonzero(~b_traded))
    n_max = min(free_s.size, free_b.size)
    for i in free_s:  # every Seller posts an ask (or none)
        g = s_strategy[i]
        act, move, legal = _decide_one(kinds[g], SELLER, (P, T), clock,
                                       (s_member[i], s_lo[i], s_hi[i]),
                                       (0, book[0][SELLER, i], seen[SELLER, i]),
                                       (best(book, SELLER, P), 0, tape), st, g, rng, scratch)
        if not legal:
            return _refused(n_max, move, g)
        if act < P:
            _post(book, SELLER, i, act + 1)
    ps, pb = np.zeros(n_max, np.int64), np.zeros(n_max, np.int64)
    level = np.zeros(n_max, np.int64)
    n = 0
    for i in free_b:
        offer = best(book, SELLER, P)
        if offer == 0:  # no ask stands
            break
        g = n_groups_s + b_strategy[i]
        act, move, legal = _decide_one(kinds[g], BUYER, (P, T), clock,
                                       (b_member[i], b_lo[i], b_hi[i]),
                                       (offer, book[0][BUYER, i], seen[BUYER, i]),
                                       (offer, 0, tape), st, g, rng, scratch)
        seen[BUYER, i] = offer
        if not legal:
            return _refused(n_max, move, g)
        if act != P:  # she leaves it: a posted price is taken or left, not bargained
            continue
        j = book[3][SELLER, offer]  # the ask posted first at the lowest level
        _withdraw(book, SELLER, j)
        s_traded[j] = True
        b_traded[i] = True
        ps[n], pb[n], level[n] = j, i, offer
        n += 1
        on_tape(tape, offer, clock[0])
    return _settled(rules, (ps[:n], pb[:n], level[:n], np.full(n, SELLER, np.int64)), centre,
                    sellers, buyers, pooled, (kinds, n_groups_s, st))


INSTITUTION = Institution(
    name="posted", words="posted-offer market", order=3,
    help="Sellers post asks, Buyers take them or leave them",
    template=__name__, entry="posted_step", chart="the posted asks", quotes=standing)
