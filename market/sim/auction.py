"""How traders meet besides bilateral bargaining: a continuous double auction and a call market.

A template, compiled with the strategies' decisions by :mod:`strategies.compiled`
beside the market's bilateral step (:mod:`market.sim.kernel`); the engine
(:mod:`market.sim.engine`) calls :func:`cda_step` or :func:`call_step` for ``k`` steps
at a time, as it calls bilateral bargaining's :func:`market.sim.kernel.market_step`: the
same arguments (the book last) and the same rows back; each step is a round,
:func:`cda_round` or :func:`call_round`. Every trader decides through the very rule it
plays in bilateral bargaining: its :class:`~market.game.rules.Turn` is filled from the
book instead of from one opponent (``docs/pages/protocol.md``, "Institutions"):

| Turn | continuous double auction ``cda`` | call market ``call`` |
|---|---|---|
| ``offer`` | the best opposite quote | the best opposite quote the last call left |
| ``prev`` | its ``offer`` at its last activation | its ``offer`` at the last call |
| ``own`` | its own standing quote | its quote at the last call |
| ``move`` | 0 without ``offer``, else ``2 r + 1`` (step ``r``) | the same (call ``r``) |
| ``rounds`` | the period's steps ``K`` | the same |
| ``own_best`` | its own side's best standing quote | its side's best the last call left |
| ``prior_low``, ``prior_high`` | the extreme levels traded in the previous period | the same |
| ``quiet`` | the steps since the period's last trade (or its start) | the same, in calls |

(0: no quote, or no trade.) A table player (a Q-learner) reads the same book through its table: its
rounds are the game's ``T``, its step counted up to the last of them, and it
learns from each trade it made as from a negotiation of two moves.

What an action does, in both: an offer of level ``k`` is a quote at ``k``; accept
is a quote at ``offer``; reject is no quote (the standing quote, if any,
stays). The legal actions are the game's (:func:`market.game.moves.legal_block`):
a quote only when nothing stands opposite, accept or reject only in the
period's last step.

A trade is recorded as a two-move negotiation: the standing quote's owner
(its *maker*) offered its level, the other side accepted, so every table
and figure the bilateral market makes (deals, prices, surplus, the last
step's pairs) reads the same way. A call market's trades are recorded as
the Seller's offer at the clearing level, accepted by the Buyer.
"""

from __future__ import annotations

import numpy as np

from market.compiled import jit
from market.compiled.jit import njit
from market.game import numeric
from market.game.buffers import BOOK_VIEW, floats, ints
from market.game.dispatch import decide, respond, responds, tabled  # bound when generated
from market.game.moves import legal_block
from market.game.rules import BUYER, SELLER
from market.sim import exchange
from market.sim.kernel import (  # bound when generated
    learn_all,
    named,
    no_sums,
    packed,
    settled_sums,
)
from market.sim.ledger import new_rows, record_step

#: the book's arrays, in the order :func:`cda_step` takes them (:func:`new_book` makes them)
BOOK_FIELDS = ("quote", "nxt", "prv", "head", "tail", "seen", "left", "tape")
#: the tape's fields: the lowest and highest levels traded this period and in the previous
#: one (0: none), and the step of the period's last trade (0 until one is made)
LOW, HIGH, PRIOR_LOW, PRIOR_HIGH, LAST_TRADE = 0, 1, 2, 3, 4
NONE = -1
#: the book institutions' codes in :func:`_steps`
CDA, CALL = 0, 1


def new_book(n: int, prices: int) -> tuple[np.ndarray, ...]:
    """An empty book for sides of at most ``n`` traders and ``prices`` levels: per side and
    trader its standing quote (0: none), its neighbours in its level's queue and the best
    opposite quote it last saw; per side and level the queue's ends; per side the best
    quote a call market's last call left unmatched; and the tape of trades every trader
    sees (its fields: ``LOW`` to ``LAST_TRADE``)."""
    return (np.zeros((2, n), np.int64), np.full((2, n), NONE, np.int64),
            np.full((2, n), NONE, np.int64), np.full((2, prices + 1), NONE, np.int64),
            np.full((2, prices + 1), NONE, np.int64), np.zeros((2, n), np.int64),
            np.zeros(2, np.int64), np.zeros(5, np.int64))


@njit(cache=True)
def clear_book(book: tuple) -> None:
    """Empty the book (a new trading period): the model as a period opens, a compiled call
    that runs on into the next period. The period that ended is the tape's previous one."""
    quote, nxt, prv, head, tail, seen, left, tape = book
    for two in (quote, seen):
        two[:, :] = 0
    for two in (nxt, prv, head, tail):
        two[:, :] = NONE
    left[:] = 0
    tape[PRIOR_LOW], tape[PRIOR_HIGH] = tape[LOW], tape[HIGH]
    tape[LOW] = tape[HIGH] = tape[LAST_TRADE] = 0


@njit(cache=True, inline="always")
def on_tape(tape: np.ndarray, level: int, r: int) -> None:
    """A trade at ``level`` in step ``r`` of the period, as every trader sees it."""
    tape[LOW] = level if tape[LOW] == 0 else min(tape[LOW], level)
    tape[HIGH] = max(tape[HIGH], level)
    tape[LAST_TRADE] = r


@njit(cache=True, inline="always")
def _withdraw(book: tuple, side: int, i: int) -> None:
    """Take trader ``i``'s standing quote (if any) out of its level's queue."""
    quote, nxt, prv, head, tail = book[0], book[1], book[2], book[3], book[4]
    k = quote[side, i]
    if k == 0:
        return
    a, b = prv[side, i], nxt[side, i]
    if a == NONE:
        head[side, k] = b
    else:
        nxt[side, a] = b
    if b == NONE:
        tail[side, k] = a
    else:
        prv[side, b] = a
    quote[side, i] = 0
    nxt[side, i] = NONE
    prv[side, i] = NONE


@njit(cache=True, inline="always")
def _post(book: tuple, side: int, i: int, k: int) -> None:
    """Trader ``i``'s quote at level ``k``, last in its level's queue (time priority)."""
    quote, nxt, prv, head, tail = book[0], book[1], book[2], book[3], book[4]
    _withdraw(book, side, i)
    quote[side, i] = k
    t = tail[side, k]
    prv[side, i] = t
    if t == NONE:
        head[side, k] = i
    else:
        nxt[side, t] = i
    tail[side, k] = i


@njit(cache=True, inline="always")
def best(book: tuple, side: int, prices: int) -> int:
    """The best standing quote of ``side``: the highest bid, the lowest ask (0: none)."""
    head = book[3]
    if side == BUYER:
        for k in range(prices, 0, -1):
            if head[BUYER, k] != NONE:
                return k
        return 0
    for k in range(1, prices + 1):
        if head[SELLER, k] != NONE:
            return k
    return 0


@njit(cache=True)
def _decide_one(kind, side, game, clock, trader, view, shown, st, g, rng, scratch):  # noqa: ANN001, ANN201
    """One trader's action through its population's compiled decision (the same call the
    bilateral loops make, on a one-row table), the move it was asked at, and whether the
    action is legal there (:func:`~market.game.moves.legal_block`: a caller refuses the step
    when it is not):
    ``game`` the game's ``(P, T)``, ``clock`` ``(r, K)``, ``trader`` ``(member, lo, hi)``,
    ``view`` what it sees ``(offer, own, prev)``, ``shown`` what the book shows everyone
    ``(best ask, best bid, tape)`` (its :class:`~market.game.rules.Turn`'s ``own_best``,
    ``prior_low``, ``prior_high`` and ``quiet``). A rule's rounds are the period's steps; a
    table player's (a learner's) are the game's own ``T``, its step in the period counted up
    to the last of them.

    A call of its own that lends its arrays (:func:`~market.compiled.jit.borrowed`):
    inlined, the thirteen arrays it hands on were counted at every activation."""
    st, scratch = jit.borrowed((st, scratch))
    member, lo, hi = trader
    offer, own, prev = view
    P, T = game
    r, K = clock
    rounds, step = (T, min(r, T - 1)) if tabled(kind) else (K, r)
    move = 0 if offer == 0 else 2 * step + 1
    rows, last, before, first, s_lo, s_hi, s_member, time_left, out, loyal, book = scratch
    last[side, 0], last[1 - side, 0], before[1 - side, 0] = own, offer, prev
    s_lo[0], s_hi[0], s_member[0] = lo, hi, member
    first[0] = side if move == 0 else 1 - side
    ask, bid, tape = shown
    book[SELLER], book[BUYER] = ask, bid
    book[2], book[3], book[4] = tape[PRIOR_LOW], tape[PRIOR_HIGH], r - tape[LAST_TRADE]
    decide(kind, side, move, (P, rounds), rows, (last, before, first),
           (s_lo, s_hi, s_member, time_left, loyal, book), st, g, rng, out)
    lo_a, hi_a = legal_block(move, P, rounds)
    return out[0], move, lo_a <= out[0] < hi_a


@njit(cache=True, inline="always")
def _listening(kinds):  # noqa: ANN001, ANN201
    """Whether any population hears the book's public events (ZIP does)."""
    for k in kinds:  # noqa: SIM110 (numba compiles no generator expression)
        if responds(k):
            return True
    return False


@njit(cache=True, inline="always")
def _tell(event, sellers, buyers, kinds, n_groups_s, st, rng):  # noqa: ANN001, ANN201
    """Every trader of a population that hears public events hears ``event``: ``(level,
    deal, shout side)``, a quote of that side at that level that traded (deal 1) or stood
    (deal 0); a call market's price is heard as a deal of neither side (-1). Traders are
    told in order, Sellers' populations first, each population's traders by index."""
    for g in range(kinds.size):
        if not responds(kinds[g]):
            continue
        s = SELLER if g < n_groups_s else BUYER
        own = g if s == SELLER else g - n_groups_s
        side = sellers if s == SELLER else buyers
        strategy, member, traded, lo, hi = side[1], side[2], side[7], side[8], side[9]
        for i in range(strategy.size):
            if strategy[i] == own:
                respond(kinds[g], s, event, member[i], lo[i] if s == SELLER else hi[i],
                        not traded[i], st, g, rng)


@njit(cache=True)
def _scratch() -> tuple:
    one = np.zeros(1, np.int64)
    return (one.copy(), np.zeros((2, 1), np.int64), np.zeros((2, 1), np.int64), one.copy(),
            one.copy(), one.copy(), one.copy(), np.full(1, -1, np.int64), one.copy(),
            one.copy(), np.zeros(len(BOOK_VIEW), np.int64))


@njit(cache=True, inline="always")
def _side_of(a: int, free_s: np.ndarray, free_b: np.ndarray) -> tuple[int, int]:
    """The trader at place ``a`` of a step's order: Sellers' places first, then Buyers'."""
    if a < free_s.size:
        return SELLER, free_s[a]
    return BUYER, free_b[a - free_s.size]


@njit(cache=True)
def cda_step(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
             draws, book):
    """``k`` steps of the continuous double auction (each: :func:`cda_round`): what
    :func:`market.sim.kernel.market_step` takes and returns, the book last."""
    return _steps(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st,
                  draws, (CDA, book))


@njit(cache=True)
def call_step(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
              draws, book):
    """``k`` calls of the call market (each: :func:`call_round`): what
    :func:`market.sim.kernel.market_step` takes and returns, the book last."""
    return _steps(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st,
                  draws, (CALL, book))


@njit(cache=True)
def _steps(k, rules, clock, centre, sellers, buyers, pooled, kinds, n_groups_s, st, draws,  # noqa: ANN001, ANN201
           how):
    """``k`` steps of the book institution ``how`` ``(which, book)``, each a round of it, from
    step ``r0`` of a period of ``K`` (``clock``: ``(r0, K, with_clock)``), on into the next
    periods (each opening with every trader holding its unit and the book empty), with a row
    of each (:func:`~market.sim.ledger.record_step`)."""
    which, book = how
    r0, K = clock[0], clock[1]
    s_strategy, s_earn, s_traded = sellers[1], sellers[5], sellers[7]
    b_strategy, b_earn, b_traded = buyers[1], buyers[5], buyers[7]
    n_s = n_groups_s
    rows, levels, offsets = new_rows(k, r0, K, kinds.size, s_strategy.size, b_strategy.size)
    packed_j, actions_j = floats(8, 0), np.full((0, 2), -1, np.int32)
    for j in range(k):
        r = (r0 + j) % K
        if r == 0 and j > 0:  # a new period
            exchange.hold_units(s_traded, b_traded)
            clear_book(book)
        if which == CDA:
            packed_j, actions_j, bad, bad_g, sums = cda_round(
                rules, (r, K), centre, sellers, buyers, book, pooled, kinds, n_groups_s, st,
                draws)
        else:
            packed_j, actions_j, bad, bad_g, sums = call_round(
                rules, (r, K), centre, sellers, buyers, book, pooled, kinds, n_groups_s, st,
                draws)
        if bad >= 0:
            return j, rows, levels, offsets, packed_j, actions_j, bad, bad_g
        record_step(rows, j, sums, packed_j, levels, offsets,
                    ((s_strategy, s_earn, n_s), (b_strategy, b_earn, kinds.size - n_s)))
    return k, rows, levels, offsets, packed_j, actions_j, -1, -1


@njit(cache=True)
def cda_round(rules, clock, centre, sellers, buyers, book, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
              draws):
    """One activation round of the continuous double auction, on the model's arrays.

    ``clock``: ``(r, K)``, the step in the period and the period's steps; ``centre``: the
    period's competitive price (the ledger's sums are taken about it).
    Every trader still holding its unit is activated once, in one random
    order of both sides together; an activated trader that still holds its
    unit acts on the book (the module's table). A quote that crosses the best
    opposite quote (a bid at or above the best ask, an ask at or below the
    best bid), and an accept, trade at the standing quote's level with the
    quote that has stood longest at that level; both traders leave the book
    and the period. Any other quote replaces the trader's own standing quote.
    Deals settle as the bilateral market's do (:func:`~market.sim.exchange.settle_deals`),
    and learners learn from each trade they made as from a negotiation of two moves.
    ``pooled``: members per team under a common wallet (else empty).

    Returns the round's packed results (:func:`~market.sim.kernel.packed`), its actions,
    the illegal action's move and population (-1: none) and its ledger sums.
    """
    rng = jit.generator(draws)
    sellers, buyers, book, pooled, kinds, st = jit.borrowed(
        (sellers, buyers, book, pooled, kinds, st))  # the model's, lent for the call
    rules = named(rules)
    P, T = rules.prices, rules.rounds
    s_res, s_strategy, s_member, s_team, s_cash, s_earn, s_trades, s_traded, s_lo, s_hi = sellers
    b_res, b_strategy, b_member, b_team, b_cash, b_earn, b_trades, b_traded, b_lo, b_hi = buyers
    seen, tape = book[5], book[7]
    free_s = np.flatnonzero(~s_traded)
    free_b = np.flatnonzero(~b_traded)
    order = numeric.permutation(rng, np.arange(free_s.size + free_b.size))
    n_max = min(free_s.size, free_b.size)
    ps, pb = np.zeros(n_max, np.int64), np.zeros(n_max, np.int64)
    level, maker = np.zeros(n_max, np.int64), np.zeros(n_max, np.int64)
    scratch = _scratch()
    listening = _listening(kinds)
    n = 0
    for a in order:
        side, i = _side_of(a, free_s, free_b)
        if (s_traded[i] if side == SELLER else b_traded[i]):
            continue
        opp = 1 - side
        ask, bid = best(book, SELLER, P), best(book, BUYER, P)
        offer = bid if side == SELLER else ask
        if side == SELLER:
            g, m, lo, hi = s_strategy[i], s_member[i], s_lo[i], s_hi[i]
        else:
            g, m, lo, hi = n_groups_s + b_strategy[i], b_member[i], b_lo[i], b_hi[i]
        act, move, legal = _decide_one(kinds[g], side, (P, T), clock, (m, lo, hi),
                                       (offer, book[0][side, i], seen[side, i]),
                                       (ask, bid, tape), st, g, rng, scratch)
        seen[side, i] = offer
        if not legal:
            return _refused(n_max, move, g)
        if act == P + 1:  # no quote: the standing one stays
            continue
        k = offer if act == P else act + 1
        crosses = offer > 0 and (k >= offer if side == BUYER else k <= offer)
        if not crosses:
            _post(book, side, i, k)
            if listening:
                _tell((k, 0, side), sellers, buyers, kinds, n_groups_s, st, rng)
            continue
        j = book[3][opp, offer]  # the quote that has stood longest at the best level
        _withdraw(book, opp, j)
        _withdraw(book, side, i)
        s, b = (i, j) if side == SELLER else (j, i)
        s_traded[s] = True
        b_traded[b] = True
        ps[n], pb[n], level[n], maker[n] = s, b, offer, opp
        n += 1
        on_tape(tape, offer, clock[0])
        if listening:  # the standing quote was accepted
            _tell((offer, 1, opp), sellers, buyers, kinds, n_groups_s, st, rng)
    return _settled(rules, (ps[:n], pb[:n], level[:n], maker[:n]), centre, sellers, buyers,
                    pooled, (kinds, n_groups_s, st))


@njit(cache=True)
def call_round(rules, clock, centre, sellers, buyers, book, pooled, kinds, n_groups_s, st,  # noqa: ANN001, ANN201
               draws):
    """One call of the call market (a clearing house), on the model's arrays.

    Every trader still holding its unit submits one quote (or none), asked
    in one random order of both sides together (the order of the draws, and
    the priority among equal quotes). Bids sorted from the highest, asks
    from the lowest (equal quotes in that order), the call trades the
    largest number ``q`` of units such that the ``q``-th bid is at or above
    the ``q``-th ask, all at one level: the middle, rounded down, of the
    levels that clear exactly ``q`` units, from ``max(ask q, bid q+1)`` to
    ``min(bid q, ask q+1)``. The ``i``-th bidder trades with the ``i``-th
    asker. The best bid and ask left unmatched are what the next call shows
    (``offer``). Returns what :func:`cda_round` returns.
    """
    rng = jit.generator(draws)
    sellers, buyers, book, pooled, kinds, st = jit.borrowed(
        (sellers, buyers, book, pooled, kinds, st))  # the model's, lent for the call
    rules = named(rules)
    P, T = rules.prices, rules.rounds
    s_res, s_strategy, s_member, s_team, s_cash, s_earn, s_trades, s_traded, s_lo, s_hi = sellers
    b_res, b_strategy, b_member, b_team, b_cash, b_earn, b_trades, b_traded, b_lo, b_hi = buyers
    quote, seen, left, tape = book[0], book[5], book[6], book[7]
    free_s = np.flatnonzero(~s_traded)
    free_b = np.flatnonzero(~b_traded)
    order = numeric.permutation(rng, np.arange(free_s.size + free_b.size))
    scratch = _scratch()
    count = np.zeros((2, P + 2), np.int64)  # quotes per side and level
    bids, asks = np.zeros(free_b.size, np.int64), np.zeros(free_s.size, np.int64)
    nb = ns = 0
    for a in order:
        side, i = _side_of(a, free_s, free_b)
        if side == SELLER:
            g, m, lo, hi = s_strategy[i], s_member[i], s_lo[i], s_hi[i]
        else:
            g, m, lo, hi = n_groups_s + b_strategy[i], b_member[i], b_lo[i], b_hi[i]
        offer = left[1 - side]
        act, move, legal = _decide_one(kinds[g], side, (P, T), clock, (m, lo, hi),
                                       (offer, quote[side, i], seen[side, i]),
                                       (left[SELLER], left[BUYER], tape), st, g, rng, scratch)
        seen[side, i] = offer
        if not legal:
            return _refused(min(free_s.size, free_b.size), move, g)
        k = 0 if act == P + 1 else (offer if act == P else act + 1)
        quote[side, i] = k
        if k == 0:
            continue
        count[side, k] += 1
        if side == SELLER:
            asks[ns] = i
            ns += 1
        else:
            bids[nb] = i
            nb += 1
    # the bids from the highest, the asks from the lowest; equal quotes in the order asked
    bids, asks = bids[:nb], asks[:ns]
    start = np.zeros((2, P + 2), np.int64)
    for k in range(P - 1, 0, -1):
        start[BUYER, k] = start[BUYER, k + 1] + count[BUYER, k + 1]
    for k in range(2, P + 1):
        start[SELLER, k] = start[SELLER, k - 1] + count[SELLER, k - 1]
    by_bid, by_ask = np.zeros(nb, np.int64), np.zeros(ns, np.int64)
    for i in bids:
        k = quote[BUYER, i]
        by_bid[start[BUYER, k]] = i
        start[BUYER, k] += 1
    for i in asks:
        k = quote[SELLER, i]
        by_ask[start[SELLER, k]] = i
        start[SELLER, k] += 1
    q = 0
    while q < min(nb, ns) and quote[BUYER, by_bid[q]] >= quote[SELLER, by_ask[q]]:
        q += 1
    ps, pb = by_ask[:q].copy(), by_bid[:q].copy()
    level = np.zeros(q, np.int64)
    if q > 0:
        low = quote[SELLER, by_ask[q - 1]]
        if q < nb:
            low = max(low, quote[BUYER, by_bid[q]])
        high = quote[BUYER, by_bid[q - 1]]
        if q < ns:
            high = min(high, quote[SELLER, by_ask[q]])
        level[:] = (low + high) // 2
        on_tape(tape, level[0], clock[0])
        if _listening(kinds):
            _tell((level[0], 1, -1), sellers, buyers, kinds, n_groups_s, st, rng)
    left[BUYER] = quote[BUYER, by_bid[q]] if q < nb else 0
    left[SELLER] = quote[SELLER, by_ask[q]] if q < ns else 0
    return _settled(rules, (ps, pb, level, np.full(q, SELLER, np.int64)), centre, sellers,
                    buyers, pooled, (kinds, n_groups_s, st))


@njit(cache=True, inline="always")
def _settled(rules, trades, centre, sellers, buyers, pooled, populations):  # noqa: ANN001, ANN201
    """The step's trades ``(ps, pb, level, maker)`` settled, as the bilateral step returns
    its deals: each trade a negotiation in which the maker's offer at the level was accepted
    (two moves), which its traders' learners learn from (``rules``: the market's
    :class:`~market.sim.kernel.Rules`; ``populations``: ``(kinds, n_groups_s, st)``)."""
    P, T, span = rules.prices, rules.rounds, rules.span
    ps, pb, level, maker = trades
    kinds, n_groups_s, st = populations
    s_res, s_strategy, s_member, s_team, s_cash, s_earn, s_trades, s_traded, s_lo, s_hi = sellers
    b_res, b_strategy, b_member, b_team, b_cash, b_earn, b_trades, b_traded, b_lo, b_hi = buyers
    n = ps.size
    n_moves = np.full(n, 2, np.int64)
    actions = np.full((n, 2), -1, np.int32)
    for i in range(n):
        actions[i, 0], actions[i, 1] = level[i] - 1, P
    prices, deal, gain_s, gain_b = exchange.settle_deals(
        ps, pb, level, n_moves, (rules.grid_lo, rules.grid_step, span), rules.pressure,
        (s_res, s_cash, s_earn, s_trades, s_traded), (b_res, b_cash, b_earn, b_trades, b_traded))
    reward = exchange.pay(deal, gain_s, gain_b, span, s_team[ps], b_team[pb], pooled)
    learn_all((P, T), (ps, pb), (s_strategy, b_strategy), (s_member, b_member),
              (actions, maker, n_moves, level), reward, (ints(n, -1), ints(n, 0)), kinds,
              n_groups_s, st)
    return packed(ps, pb, maker, level, n_moves, prices, gain_s, gain_b), actions, -1, -1, \
        settled_sums((ps, pb, deal), (prices, gain_s, gain_b), s_res, b_res, centre)


@njit(cache=True, inline="always")
def _refused(n, move, g):  # noqa: ANN001, ANN201
    """What a step returns when population ``g`` played an illegal action at ``move``."""
    e = np.zeros(0, np.int64)
    return packed(e, e, e, e, e, np.zeros(0), np.zeros(0), np.zeros(0)), \
        np.full((0, 2), -1, np.int32), move, g, no_sums()
