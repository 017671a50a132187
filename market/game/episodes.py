"""The training episode loop, compiled: a template that :mod:`market.game.train_kernel` compiles.

Everything that plays the two-agent game on Q-tables for training runs
here: a seed's episodes (epsilon-greedy moves, the first mover
alternating), its Bellman updates, the per-episode statistics, and the
greedy test (the same loop with learning off). :mod:`market.game.train_kernel`
builds it (:mod:`market.compiled.build`: an edit to anything it inlines, the
learners' update and greedy choice in :mod:`market.game.qtable` among them, is
a new build).

Random numbers: each seed has its own xoshiro256** generator (Blackman and
Vigna), four 64-bit words seeded by ``SeedSequence(seed, spawn_key=(i,))``
for seed index ``i`` (:func:`market.game.train_kernel.seed_states`). A seed's
draws therefore do not depend on how many seeds train together, on the
number of threads, nor on the order in which threads run. The draws of one
move, in order:

1. if the mover explores with ``epsilon > 0``: one uniform ``u``; it
   explores when ``u < epsilon`` and then draws one more uniform ``v`` and
   plays legal action ``lo + floor(v * (hi - lo))``;
2. otherwise it plays greedily: the legal maxima of its row (exact
   equality), and if there are several, one uniform ``v`` picks the
   ``floor(v * count)``-th of them in increasing action order;
3. with a breakdown risk ``Q > 0``, after a counter-offer (an offer at a
   move ``m >= 1``, :func:`market.game.moves.at_risk`): one uniform ``w``; the
   talks break down, with no deal, when ``w < Q`` (:func:`~market.game.moves.breaks`).
   Without the risk nothing is drawn, so the document's game draws as it
   always did.

Uniforms are ``(x >> 11) * 2**-53`` of the generator's 64-bit output ``x``.

The rules of a move, what a deal is worth and which actions a row allows are
the game's own compiled rules (:mod:`market.game.moves`,
:func:`market.game.qtable.row_legal`); the Q-table row formula is written
here as a scalar function (:func:`move_row`) because numba cannot compile
:mod:`market.game.qtable`'s array version; a test checks it against qtable's
for every move and offer. The Bellman update and the greedy choice are the
learners' own (:func:`market.game.qtable.bellman_update1`,
:func:`market.game.qtable.greedy_ties`).
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit, prange
from market.game import moves, qtable
from market.game.pressure import Pressure

_SHIFT_U = np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53


# --- random numbers -------------------------------------------------------------------------
# The hot helpers are inlined into the kernel at numba's IR level (``inline="always"``):
# a call that passes arrays would otherwise pay reference counting on every move.
@njit(cache=True, inline="always")
def _rotl(x: np.uint64, k: np.uint64) -> np.uint64:
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True, inline="always")
def next_u64(st: np.ndarray) -> np.uint64:
    """Advance the xoshiro256** state ``st`` (4 uint64, in place); return its next output."""
    s0, s1, s2, s3 = st[0], st[1], st[2], st[3]
    result = _rotl(s1 * np.uint64(5), np.uint64(7)) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, np.uint64(45))
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3
    return result


@njit(cache=True, inline="always")
def uniform(st: np.ndarray) -> float:
    """A uniform double in ``[0, 1)`` from the top 53 bits of the next output."""
    return float(np.int64(next_u64(st) >> _SHIFT_U)) * _TO_UNIT  # 53 bits: exact as int64


# --- the table layout, as scalars --------------------------------------------------------------
@njit(cache=True, inline="always")
def move_row(prices: int, move: int, offered: int) -> int:
    """Row seen at ``move`` after an offer of action ``offered`` (qtable.move_row, scalar)."""
    if move == 0:
        return 0
    return 1 + ((move - 1) >> 1) * prices + offered


#: the legal actions of a row, ``[lo, hi)``: the Q-table's (:func:`market.game.qtable.row_legal`)
legal_range = qtable.row_legal

bellman_update = qtable.bellman_update1  # the one compiled update, the learners' own


# --- one move, one episode, one update ---------------------------------------------------------
# Tables are addressed flat: a seed's tables are one row ``qf`` of an (n, 2 * R * S * A)
# array, and cell (side, role slot r, row, action a) is ``((side * R + r) * S + row) * A + a``.
@njit(cache=True, inline="always")
def choose(qf: np.ndarray, base: int, P: int, lo: int, hi: int, epsilon: float,
           st: np.ndarray) -> int:
    """Epsilon-greedy action among ``lo .. hi-1`` of the row at ``qf[base:]``, ties uniform:
    the learners' greedy choice (:func:`market.game.qtable.greedy_ties`) with the draws of
    the module docstring."""
    if epsilon > 0.0 and uniform(st) < epsilon:
        return lo + int(uniform(st) * (hi - lo))
    c1 = min(hi, P)
    accept, reject = lo <= P < hi, lo <= P + 1 < hi
    best, count, first = qtable.greedy_ties(qf, base, lo, c1, accept, reject, P)
    if count == 1:
        return first
    return qtable.nth_tie(qf, base, lo, c1, accept, P, best, first, int(uniform(st) * count))


@njit(cache=True, inline="always")
def play_episode(
    qf: np.ndarray, game: tuple[int, int, int], first: int, eps: tuple[float, float],
    stale_first: bool, st: np.ndarray, acts: np.ndarray, rows: np.ndarray,
    start: tuple[int, int, bool], pressure: Pressure,
) -> tuple[int, int]:
    """Play one negotiation on one seed's flat tables ``qf``; return ``(n_moves, level)``,
    level -1 when the talks broke down (``pressure``: the game's time pressure; with a
    breakdown risk, one uniform drawn after each counter-offer, the module docstring's
    step 3).

    ``game``: ``(R, P, T)``, R the tables per side (1, or 2 role-aware);
    ``eps``: each side's exploration rate. Writes the action and the row of
    each move into ``acts`` and ``rows``.
    ``stale_first``: the original project's test loop, in which the first
    mover's observation is never updated, so it plays from the start row
    (offers only) at every move and never accepts. ``start``: ``(m0, offer0,
    explores)``, the move the negotiation starts at and the offer then on the
    table (0, 0: the beginning; an exploring start otherwise, see :func:`run`),
    and whether the move at ``m0`` is drawn uniformly among the legal actions
    (exploration 1) whatever the mover's exploration rate.
    """
    R, P, T = game
    m0, offer0, m0_explores = start
    eps_seller, eps_buyer = eps
    S, A = P * T + 2, P + 2
    offer = offer0
    for m in range(m0, 2 * T):
        role = m & 1
        side = moves.mover(m, first)
        r = role if R == 2 else 0
        row = 0 if (role == 0 and stale_first) else move_row(P, m, offer)
        lo, hi = legal_range(P, T, row)
        eps = eps_seller if side == 0 else eps_buyer
        if m == m0 and m0_explores:
            eps = 1.0
        a = choose(qf, ((side * R + r) * S + row) * A, P, lo, hi, eps, st)
        acts[m] = a
        rows[m] = row
        end = moves.outcome(a, P, moves.offered(offer))  # ``offer``: the last offer's action
        if end != moves.GOES_ON:
            return m + 1, end
        if moves.at_risk(m, pressure) and moves.breaks(uniform(st), m, pressure):
            return m + 1, -1
        offer = a
    return 2 * T, 0  # not reached: the last move may only accept or reject


@njit(cache=True, inline="always")
def learn_episode(
    qf: np.ndarray, game: tuple[int, int, int], side: int, first: int, acts: np.ndarray,
    rows: np.ndarray, outcome: tuple[int, int, int], rates: tuple[float, float, float],
    pressure: Pressure,
) -> None:
    """Bellman-update ``side``'s table in one seed's flat tables ``qf`` along one episode.

    ``outcome``: ``(n_moves, level, m0)``, how the episode ended (level 0: no
    deal, -1: the talks broke down) and the move it started at (its earlier
    moves were not played). ``rates``: ``(lr, gamma, bonus)``. ``bonus``: added
    to both sides' reward for a deal (0: the document's rewards), so that a
    responder offered its zero-surplus price is no longer indifferent between
    accepting and rejecting. ``pressure``: the game's time pressure; a deal on
    the ``k``-th offer (accepted at move ``k + 1 = n_moves - 1``) is worth what
    :func:`market.game.moves.worth` says to ``side``.

    A move's target is the reward if the negotiation ended before the
    mover's next move, else ``gamma`` times the value (max over legal
    actions) of the row it saw at its next move. The updates run in move
    order after the episode; a side never visits a row twice in one
    negotiation and each update reads only the row of its next move, which
    no earlier update of this episode touched, so this equals the
    document's online updates.
    """
    R, P, T = game
    n_moves, level, m0 = outcome
    lr, gamma, bonus = rates
    S, A = P * T + 2, P + 2
    role = 0 if side == first else 1
    r = role if R == 2 else 0
    reward = 0.0
    if level > 0:
        share = level / P if side == 0 else 1.0 - level / P
        reward = moves.worth(share + bonus, side, n_moves - 2, pressure, 1.0)
    table = (side * R + r) * S * A
    for m in range(m0 + ((m0 ^ role) & 1), n_moves, 2):  # the side's moves from m0 on
        cell = table + rows[m] * A + acts[m]
        if m + 2 < n_moves:
            nxt = table + rows[m + 2] * A
            lo, hi = legal_range(P, T, rows[m + 2])
            v = qtable.row_max(qf, nxt, lo, hi)
            qf[cell] = bellman_update(qf[cell], 0.0, v, lr, gamma)
        else:
            qf[cell] = bellman_update(qf[cell], reward, 0.0, lr, gamma)


@njit(cache=True, parallel=True)
def run(
    q: np.ndarray, rng: np.ndarray, counts: np.ndarray, log: np.ndarray,
    game: tuple[int, int, int], schedule: tuple[np.ndarray, np.ndarray, int, int],
    learning: tuple[np.ndarray, float, float],
    pressure: Pressure,
    opening: tuple[int, bool, float],
) -> None:
    """Play (and learn from) ``len(eps)`` episodes for every seed, seeds in parallel.

    ``q`` (n, 2 * R * S * A): every seed's live tables, flat (a C-contiguous
    ``(n, 2, R, S, A)`` array reshaped), ``game`` ``(R, P, T)``. ``rng``
    (n, 4): the seeds' generator states, advanced in place. ``schedule``:
    ``(eps, lr, e0, per_cycle)``; episode ``k`` is played with exploration
    ``eps[k]`` for the learning sides (the others play greedily) and learning
    rate ``lr[k]``. ``learning``: ``(learns, gamma, bonus)``; the tables of
    the sides with ``learns[side]`` are updated in place, and ``bonus`` is the
    learners' extra reward for a deal. ``pressure``: the game's time pressure
    (:class:`~market.game.pressure.Pressure`; :func:`play_episode`,
    :func:`learn_episode`). ``opening``: ``(first0,
    stale_first, starts)``; the first mover is ``first0`` on even ``k``, the
    other side on odd ``k``. ``counts`` (n, C, 7): statistics
    (:data:`market.game.train_kernel.COUNT_COLUMNS`) added to slot
    ``(e0 + k) // per_cycle``, i.e. per cycle. ``log`` (n, K, 2T) or empty:
    the actions of every move (-1 after the end), for tests.

    ``starts``: the share of episodes that begin at a random state instead
    of the opening ("exploring starts", Sutton and Barto 2018, sec. 5.3), so
    that every subgame is trained however rarely the learners' own play
    reaches it. With ``starts > 0`` an episode first draws one uniform ``u``;
    if ``u < starts`` it draws the start move ``floor(v * 2T)`` and, when
    that is not move 0, the offer on the table ``floor(w * P)`` (two more
    uniforms), then plays from there with the draws of the module
    docstring, the start move's action drawn as exploration 1 would (a
    random state *and* action: every action's value is then learned against
    the opponent's current play, however greedy both have become). The moves
    before the start are not played and not learned.
    """
    R, P, T = game
    eps, lr, e0, per_cycle = schedule
    learns, gamma, bonus = learning
    first0, stale_first, starts = opening
    n = q.shape[0]
    K = eps.shape[0]
    keep = log.shape[0] > 0
    learn_s, learn_b = learns[0], learns[1]
    for i in prange(n):
        st = rng[i]
        qf = q[i]
        acts = np.empty(2 * T, dtype=np.int64)
        rows = np.empty(2 * T, dtype=np.int64)
        slot = e0 // per_cycle  # the cycle of episode k, kept by counting down
        left = per_cycle - e0 % per_cycle
        for k in range(K):
            first = first0 ^ (k & 1)
            e_s = eps[k] if learn_s else 0.0
            e_b = eps[k] if learn_b else 0.0
            m0 = 0
            offer0 = 0
            explores = starts > 0.0 and uniform(st) < starts
            if explores:
                m0 = int(uniform(st) * (2 * T))
                if m0 > 0:
                    offer0 = int(uniform(st) * P)
            n_moves, level = play_episode(qf, game, first, (e_s, e_b), stale_first, st, acts,
                                          rows, (m0, offer0, explores), pressure)
            if learn_s:
                learn_episode(qf, game, 0, first, acts, rows, (n_moves, level, m0),
                              (lr[k], gamma, bonus), pressure)
            if learn_b:
                learn_episode(qf, game, 1, first, acts, rows, (n_moves, level, m0),
                              (lr[k], gamma, bonus), pressure)
            ender = moves.mover(n_moves - 1, first)  # who played the last move
            if level > 0:
                counts[i, slot, 2 * ender] += 1
                counts[i, slot, 4] += level
                counts[i, slot, 5] += P - level
                counts[i, slot, 6] += 1
            elif level < 0:
                counts[i, slot, 7] += 1
            else:
                counts[i, slot, 2 * ender + 1] += 1
            left -= 1
            if left == 0:
                slot += 1
                left = per_cycle
            if keep:
                for m in range(2 * T):
                    log[i, k, m] = acts[m] if m0 <= m < n_moves else -1
