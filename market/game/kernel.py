"""The training episode loop, compiled once per machine with numba: the one copy of it.

Everything that plays the two-agent game on Q-tables for training runs
here: a seed's episodes (epsilon-greedy moves, the first mover
alternating), its Bellman updates, the per-episode statistics, and the
greedy test (the same loop with learning off). :mod:`market.game.training`
decides *what* to run (schemes, snapshots, schedules, cycles) and calls
:func:`run` on chunks of episodes; nothing else plays the game for training.

Why compiled: an episode is at most ``2T`` moves of a few comparisons each.
Per-call overhead of numpy (or of Python) is far larger than the work, so
only a compiled loop trains one seed fast (tens of millions of moves a
second); seeds run in parallel over the cores (``prange``).

Random numbers: each seed has its own xoshiro256** generator (Blackman and
Vigna), four 64-bit words seeded by ``SeedSequence(seed, spawn_key=(i,))``
for seed index ``i`` (:func:`seed_states`). A seed's draws therefore do not
depend on how many seeds train together, on the number of threads, nor on
the order in which threads run. The draws of one move, in order:

1. if the mover explores with ``epsilon > 0``: one uniform ``u``; it
   explores when ``u < epsilon`` and then draws one more uniform ``v`` and
   plays legal action ``lo + floor(v * (hi - lo))``;
2. otherwise it plays greedily: the legal maxima of its row (exact
   equality), and if there are several, one uniform ``v`` picks the
   ``floor(v * count)``-th of them in increasing action order.

Uniforms are ``(x >> 11) * 2**-53`` of the generator's 64-bit output ``x``.

The Q-table row formula and the legal actions of a row are written here as
scalar functions (:func:`move_row`, :func:`legal_range`) because numba
cannot compile :mod:`market.game.qtable`'s array versions; a test checks
them against qtable's for every move, offer and row. The Bellman update is
:func:`market.game.qtable.bellman_update1`, the learners' own.

Cache: ``njit(cache=True)`` stores the machine code next to this file (or
under ``NUMBA_CACHE_DIR``). numba checks only this file's timestamp for
staleness, so a change to :func:`market.game.qtable.bellman_update` alone
reaches the kernel after this file is touched or the cache cleared (the
tests compare the kernel's update with ``QLearning.learn``, which catches a
stale cache).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator

import numpy as np

from market.errors import CompileError
from market.game import qtable
from market.game.jit import IMPORT_ERROR as _IMPORT_ERROR
from market.game.jit import njit, numba, prange

if numba is not None and "NUMBA_THREADING_LAYER" not in os.environ:
    # numba's own thread pool starts a parallel region in well under a millisecond even
    # on a busy machine, where OpenMP's sleeping threads took milliseconds to wake (and
    # training calls the kernel once per cycle). It is fork-safe but not thread-safe:
    # every call holds :data:`_lock`.
    numba.config.THREADING_LAYER = "workqueue"

#: columns of the per-episode statistics :func:`run` accumulates, in order
COUNT_COLUMNS = (
    "seller_validated",
    "seller_rejected",
    "buyer_validated",
    "buyer_rejected",
    "seller_wallet",
    "buyer_wallet",
    "deals",
)

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


def seed_states(seed: int, n: int) -> np.ndarray:
    """``(n, 4)`` generator states: seed index ``i`` from ``SeedSequence(seed, spawn_key=(i,))``.

    The same as ``SeedSequence(seed).spawn(n)[i]``, so seed index ``i`` of a
    run gets the same stream whatever ``n`` is.
    """
    out = np.empty((n, 4), dtype=np.uint64)
    for i in range(n):
        out[i] = np.random.SeedSequence(seed, spawn_key=(i,)).generate_state(4, np.uint64)
    return out


# --- the table layout, as scalars --------------------------------------------------------------
@njit(cache=True, inline="always")
def move_row(prices: int, move: int, offered: int) -> int:
    """Row seen at ``move`` after an offer of action ``offered`` (qtable.move_row, scalar)."""
    if move == 0:
        return 0
    return 1 + ((move - 1) >> 1) * prices + offered


@njit(cache=True, inline="always")
def legal_range(prices: int, rounds: int, row: int) -> tuple[int, int]:
    """Legal actions of ``row`` as ``[lo, hi)`` (qtable.legal_rows, scalar; ``d`` is empty).

    Start row: offers only; rows of the last round: accept or reject;
    every other row: everything. The legal actions of a row always form one
    contiguous block of action indices.
    """
    if row == 0:
        return 0, prices
    if row > prices * rounds:
        return 0, 0
    if row > (rounds - 1) * prices:
        return prices, prices + 2
    return 0, prices + 2


bellman_update = qtable.bellman_update1  # the one compiled update, the learners' own


# --- one move, one episode, one update ---------------------------------------------------------
# Tables are addressed flat: a seed's tables are one row ``qf`` of an (n, 2 * R * S * A)
# array, and cell (side, role slot r, row, action a) is ``((side * R + r) * S + row) * A + a``.
@njit(cache=True, inline="always")
def choose(qf: np.ndarray, base: int, lo: int, hi: int, epsilon: float, st: np.ndarray) -> int:
    """Epsilon-greedy action among ``lo .. hi-1`` of the row at ``qf[base:]``, ties uniform.

    The draws are those of the module docstring.
    """
    if epsilon > 0.0 and uniform(st) < epsilon:
        return lo + int(uniform(st) * (hi - lo))
    # Three short passes instead of one with a running "new maximum" branch: the max and
    # the count of maxima compile to branch-free code, which random Q-values would
    # otherwise make the processor mispredict.
    best = qf[base + lo]
    for a in range(lo + 1, hi):
        best = max(best, qf[base + a])
    count = 0
    arg = lo
    for a in range(hi - 1, lo - 1, -1):  # downwards: ``arg`` ends at the first maximum
        if qf[base + a] == best:
            arg = a
            count += 1
    if count == 1:
        return arg
    k = int(uniform(st) * count)
    for a in range(arg, hi):
        if qf[base + a] == best:
            if k == 0:
                return a
            k -= 1
    return arg  # not reached


@njit(cache=True, inline="always")
def play_episode(
    qf: np.ndarray, R: int, P: int, T: int, first: int, eps_seller: float, eps_buyer: float,
    stale_first: bool, st: np.ndarray, acts: np.ndarray, rows: np.ndarray, m0: int, offer0: int,
    m0_explores: bool,
) -> tuple[int, int]:
    """Play one negotiation on one seed's flat tables ``qf``; return ``(n_moves, level)``.

    Writes the action and the row of each move into ``acts`` and ``rows``.
    ``stale_first``: the original project's test loop, in which the first
    mover's observation is never updated, so it plays from the start row
    (offers only) at every move and never accepts. ``m0``, ``offer0``: the
    move the negotiation starts at and the offer then on the table (0, 0: the
    beginning; an exploring start otherwise, see :func:`run`); ``m0_explores``:
    the move at ``m0`` is drawn uniformly among the legal actions (exploration
    1) whatever the mover's exploration rate.
    """
    S, A = P * T + 2, P + 2
    offer = offer0
    for m in range(m0, 2 * T):
        role = m & 1
        side = first ^ role
        r = role if R == 2 else 0
        row = 0 if (role == 0 and stale_first) else move_row(P, m, offer)
        lo, hi = legal_range(P, T, row)
        eps = eps_seller if side == 0 else eps_buyer
        if m == m0 and m0_explores:
            eps = 1.0
        a = choose(qf, ((side * R + r) * S + row) * A, lo, hi, eps, st)
        acts[m] = a
        rows[m] = row
        if a >= P:
            return m + 1, (offer + 1 if a == P else 0)
        offer = a
    return 2 * T, 0  # not reached: the last move may only accept or reject


@njit(cache=True, inline="always")
def learn_episode(
    qf: np.ndarray, R: int, P: int, T: int, side: int, first: int, acts: np.ndarray,
    rows: np.ndarray, n_moves: int, level: int, lr: float, gamma: float, bonus: float,
    discount: float, m0: int,
) -> None:
    """Bellman-update ``side``'s table in one seed's flat tables ``qf`` along one episode.

    ``bonus``: added to both sides' reward for a deal (0: the document's
    rewards), so that a responder offered its zero-surplus price is no
    longer indifferent between accepting and rejecting. ``discount``: ``side``'s
    factor per offer (the game's time cost): a deal on the ``k``-th offer
    (accepted at move ``k + 1 = n_moves - 1``) pays ``discount ** k`` of it.

    A move's target is the reward if the negotiation ended before the
    mover's next move, else ``gamma`` times the value (max over legal
    actions) of the row it saw at its next move. The updates run in move
    order after the episode; a side never visits a row twice in one
    negotiation and each update reads only the row of its next move, which
    no earlier update of this episode touched, so this equals the
    document's online updates. ``m0``: the move the episode started at (its
    earlier moves were not played).
    """
    S, A = P * T + 2, P + 2
    role = 0 if side == first else 1
    r = role if R == 2 else 0
    reward = (level / P if side == 0 else 1.0 - level / P) + bonus if level > 0 else 0.0
    if level > 0 and discount < 1.0:
        reward *= discount ** float(n_moves - 2)  # pow(), as Python computes d ** k
    table = (side * R + r) * S * A
    for m in range(m0 + ((m0 ^ role) & 1), n_moves, 2):  # the side's moves from m0 on
        cell = table + rows[m] * A + acts[m]
        if m + 2 < n_moves:
            nxt = table + rows[m + 2] * A
            lo, hi = legal_range(P, T, rows[m + 2])
            v = qf[nxt + lo]
            for b in range(lo + 1, hi):
                if qf[nxt + b] > v:
                    v = qf[nxt + b]
            qf[cell] = bellman_update(qf[cell], 0.0, v, lr, gamma)
        else:
            qf[cell] = bellman_update(qf[cell], reward, 0.0, lr, gamma)


@njit(cache=True, parallel=True)
def run(
    q: np.ndarray, R: int, P: int, T: int, rng: np.ndarray, counts: np.ndarray, eps: np.ndarray,
    lr: np.ndarray, first0: int, learns: np.ndarray, gamma: float, stale_first: bool, e0: int,
    per_cycle: int, log: np.ndarray, bonus: float, disc_s: float, disc_b: float,
    starts: float,
) -> None:
    """Play (and learn from) ``len(eps)`` episodes for every seed, seeds in parallel.

    ``q`` (n, 2 * R * S * A): every seed's live tables, flat (a C-contiguous
    ``(n, 2, R, S, A)`` array reshaped), updated in place for the sides with
    ``learns[side]``. ``rng`` (n, 4): the seeds' generator states, advanced
    in place. Episode ``k`` is played with exploration ``eps[k]`` for the
    learning sides (the others play greedily) and learning rate ``lr[k]``;
    its first mover is ``first0`` on even ``k``, the other side on odd ``k``.
    ``counts`` (n, C, 7): statistics (:data:`COUNT_COLUMNS`) added to slot
    ``(e0 + k) // per_cycle``, i.e. per cycle. ``log`` (n, K, 2T) or empty:
    the actions of every move (-1 after the end), for tests. ``bonus``: the
    learners' extra reward for a deal, ``disc_s``/``disc_b`` each side's discount
    factor per offer (:func:`learn_episode`).

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
            n_moves, level = play_episode(qf, R, P, T, first, e_s, e_b, stale_first, st, acts,
                                          rows, m0, offer0, explores)
            if learn_s:
                learn_episode(qf, R, P, T, 0, first, acts, rows, n_moves, level, lr[k], gamma,
                              bonus, disc_s, m0)
            if learn_b:
                learn_episode(qf, R, P, T, 1, first, acts, rows, n_moves, level, lr[k], gamma,
                              bonus, disc_b, m0)
            ender = first ^ ((n_moves - 1) & 1)
            if level > 0:
                counts[i, slot, 2 * ender] += 1
                counts[i, slot, 4] += level
                counts[i, slot, 5] += P - level
                counts[i, slot, 6] += 1
            else:
                counts[i, slot, 2 * ender + 1] += 1
            left -= 1
            if left == 0:
                slot += 1
                left = per_cycle
            if keep:
                for m in range(2 * T):
                    log[i, k, m] = acts[m] if m0 <= m < n_moves else -1


# --- compiling ----------------------------------------------------------------------------------
#: held by every call of :func:`run`: the workqueue thread pool runs one parallel region at a
#: time, and a view may train from several threads
_lock = threading.Lock()
_ready = False


@contextlib.contextmanager
def announce_compiles(callback: Callable[[], None] | None) -> Iterator[None]:
    """Call ``callback`` once, when numba starts compiling anything inside the block.

    numba fires its ``numba:compile`` event on real compiles only (a cache
    hit loads without one), which is how a cold cache is told from a warm
    one without timing anything.
    """
    if callback is None or numba is None:
        yield
        return
    from numba.core import event

    class _Announce(event.Listener):
        said = False

        def on_start(self, ev: event.Event) -> None:
            if not self.said:
                self.said = True
                callback()

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Announce()):
        yield


def ensure_compiled(on_compile: Callable[[], None] | None = None) -> None:
    """Load the kernel from numba's cache, or compile it (seconds, once per machine).

    ``on_compile`` is called once, before compiling, only when the cache does
    not hold the kernel for this machine (see :func:`announce_compiles`).
    Raises :class:`~market.errors.CompileError` with one line when numba
    cannot compile here.
    """
    global _ready
    if _ready:
        return
    if numba is None:
        raise CompileError(f"numba cannot be imported ({_first_line(_IMPORT_ERROR)}); "
                           "the training kernel needs it: pip install 'numba>=0.60'")
    try:
        with announce_compiles(on_compile):
            _smoke()
    except Exception as exc:
        raise CompileError(f"numba cannot compile the training kernel on this machine "
                           f"({type(exc).__name__}: {_first_line(exc)})") from exc
    _ready = True


def _smoke() -> None:
    """Call the kernel once on a tiny game (P = 2, T = 1): compiles it or loads it."""
    _call(np.zeros((1, 2, 1, 4, 4)), seed_states(0, 1), np.zeros((1, 1, 7), dtype=np.int64),
          np.ones(2), np.ones(2), 0, (True, True), 1.0, False, 0, 2, None, 0.0, (1.0, 1.0), 0.0)


def play(
    q: np.ndarray, rng: np.ndarray, counts: np.ndarray, eps: np.ndarray, lr: np.ndarray,
    first0: int, learns: tuple[bool, bool], gamma: float, stale_first: bool = False,
    e0: int = 0, per_cycle: int | None = None, log: np.ndarray | None = None,
    bonus: float = 0.0, discount: tuple[float, float] = (1.0, 1.0), starts: float = 0.0,
) -> None:
    """:func:`run` with its arguments checked and converted to the one compiled signature.

    Compiles on first use (see :func:`ensure_compiled`); ``per_cycle``
    defaults to ``len(eps)`` (every episode counted in slot 0).
    """
    ensure_compiled()
    n = q.shape[0]
    if q.ndim != 5 or q.shape[1] != 2 or q.dtype != np.float64 or not q.flags.c_contiguous:
        raise ValueError("q must be a C-contiguous float64 (n, 2, R, S, A) array")
    if rng.shape != (n, 4) or rng.dtype != np.uint64 or not rng.flags.c_contiguous:
        raise ValueError("rng must be a C-contiguous uint64 (n, 4) array")
    if counts.ndim != 3 or counts.shape[0] != n or counts.shape[2] != len(COUNT_COLUMNS) or (
            counts.dtype != np.int64):
        raise ValueError("counts must be an int64 (n, C, 7) array")
    if eps.shape != lr.shape or eps.ndim != 1:
        raise ValueError("eps and lr must be 1-d arrays of one value per episode")
    per = len(eps) if per_cycle is None else int(per_cycle)
    if len(eps) and (int(e0) + len(eps) - 1) // max(per, 1) >= counts.shape[1]:
        raise ValueError("counts has too few cycle slots for these episodes")
    _call(q, rng, counts, np.ascontiguousarray(eps, dtype=np.float64),
          np.ascontiguousarray(lr, dtype=np.float64), first0, learns, gamma, stale_first, e0,
          max(per, 1), log, bonus, discount, starts)


def _call(q, rng, counts, eps, lr, first0, learns, gamma, stale_first, e0, per_cycle,  # noqa: ANN001
          log, bonus, discount, starts) -> None:
    if log is None:
        log = np.zeros((0, 0, 0), dtype=np.int64)
    n, _, R, S, A = q.shape
    P = A - 2
    with _lock:
        run(q.reshape(n, -1), R, P, (S - 2) // P, rng, counts, eps, lr, int(first0),
            np.asarray(learns, dtype=np.bool_), float(gamma), bool(stale_first), int(e0),
            int(per_cycle), log, float(bonus), float(discount[0]), float(discount[1]),
            float(starts))


def _first_line(exc: BaseException | None) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
