"""Exact evaluation of the two-agent game by backward induction over its tree.

The two-agent game is small and finite: its state is the move ``m``
(``0 .. 2T-1``) and the last offer ``p`` on the table, and every observation
``(role, p, t)`` of a mover names exactly one such state (role "first" moves
at even ``m = 2t + 2``, role "second" at odd ``m = 2t + 1``, the start row at
``m = 0``). So policies that are Markov in the observation lose nothing, and
expected rewards, best responses and a subgame-perfect equilibrium all come
out of one sweep from the last move back to the first, ``2T`` small matrix
products. That is why NashConv can be the yardstick of learning: it costs
well under a millisecond for the document's P = 5, T = 5 game.

Policies are probabilities of shape ``(2, S, A)`` in the document's table
layout (index 0: rows used when the agent moved first, 1: when it moved
second; ``S = qtable.n_rows(protocol)``, ``A = protocol.n_actions``), with mass on
legal actions only (the terminal row ``d`` is all zeros). A leading batch
axis ``(n, 2, S, A)`` evaluates ``n`` policy pairs in one sweep (a trainer
running many seeds at once).

Values are the document's two-agent rewards: at a deal on level ``p`` the
Seller gets ``p / P`` and the Buyer ``1 - p / P``; no deal gives both 0. A
game with time pressure (:class:`~market.game.rules.Protocol`) scales a
deal on the ``k``-th offer by each side's discount factor to the power
``k`` and takes ``k`` times its cost per offer off it, and a breakdown risk
is a chance node after each counter-offer (an expectation: the talks go on
with probability ``1 - Q``, else both get 0); by default there is none, and
the discount of the Q-learner is a learning device, not part of the game.
:mod:`market.game.theory` gives what theory says the first proposer gets
under discounting, breakdown risk and fixed costs, to compare with
:func:`spe` on the grid; :mod:`market.game.outcome_sets` every pure
subgame-perfect outcome.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from market.game import moves, outcome_sets, qtable
from market.game.numeric import TIE_TOL
from market.game.policies import as_policy, check_policy
from market.game.qtable import legal_rows
from market.game.rules import (
    BUYER,
    SELLER,
    Protocol,
    side_index,
)


def near_best(x: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Which ``candidates`` of ``x`` (last axis: the alternatives at one node) are within
    :data:`TIE_TOL` of the best candidate, relative to the node's scale (the candidates'
    largest magnitude); exact equality when every candidate is 0."""
    xs = np.where(candidates, x, -np.inf)
    best = xs.max(axis=-1, keepdims=True)
    scale = np.where(candidates, np.abs(x), 0.0).max(axis=-1, keepdims=True)
    return candidates & (xs >= best - TIE_TOL * scale)

# Components of the outcome vector carried through the sweep.
_SELLER, _BUYER, _DEAL = 0, 1, 2
_K = 3


# --- the sweep --------------------------------------------------------------------------------
def _rank(protocol: Protocol) -> np.ndarray:
    """(2, A) tie-break rank per side (lower is preferred).

    Accept first, then offers from the mover's most favourable level
    (Seller: P down to 1, Buyer: 1 up to P), then reject.
    """
    P = protocol.prices
    rank = np.empty((2, P + 2))
    rank[SELLER, :P] = np.arange(P, 0, -1)
    rank[BUYER, :P] = np.arange(1, P + 1)
    rank[:, P] = 0
    rank[:, P + 1] = P + 1
    return rank


def _choose(
    q: np.ndarray, legal: np.ndarray, own: np.ndarray, rank: np.ndarray
) -> np.ndarray:
    """Deterministic maximiser: index of the chosen action per row.

    ``q`` (b, r, A, K) outcome vectors, ``own`` (b,) the mover's component
    (0 Seller, 1 Buyer). Among actions whose own value is within
    :data:`TIE_TOL` of the best (relative to the node, :func:`near_best`), keep
    those best for the opponent, then the lowest ``rank`` (see :func:`_rank`).
    """
    b = np.arange(q.shape[0])
    mine = q[b, :, :, own]  # (b, r, A)  (advanced index moves b first)
    theirs = q[b, :, :, 1 - own]
    c1 = near_best(mine, np.broadcast_to(legal, mine.shape))
    c2 = near_best(theirs, c1)
    key = np.where(c2, rank[own][:, None, :], np.inf)
    return key.argmin(axis=-1)


def _sweep(
    pol_s: np.ndarray,
    pol_b: np.ndarray,
    protocol: Protocol,
    max_s: np.ndarray,
    max_b: np.ndarray,
    record: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward induction for ``n`` policy pairs and both first movers at once.

    ``pol_s``/``pol_b`` (n, 2, S, A): fixed policies; where ``max_s[i]``
    (``max_b[i]``) is true, that side instead maximises its own reward (its
    input policy is ignored). Returns the expected outcome vectors
    ``(n, 2, K)`` indexed by first mover (K: Seller reward, Buyer reward, deal
    probability), and the policies actually played (maximisers' choices
    written into their reached rows, other rows as given; with
    ``record=False`` the inputs are returned untouched, which is faster).
    """
    P, T, A = protocol.prices, protocol.rounds, protocol.n_actions
    n = pol_s.shape[0]
    # Batch element j < n: Seller moves first; j >= n: Buyer first.
    # At even moves the first mover acts, at odd moves the second.
    first = np.repeat([SELLER, BUYER], n)
    mover_even, mover_odd = first, 1 - first
    pols = (pol_s, pol_b)
    stacked_even = np.concatenate([pol_s, pol_b])  # policies of the movers at even m
    stacked_odd = np.concatenate([pol_b, pol_s])
    maxes = (np.asarray(max_s, bool), np.asarray(max_b, bool))
    max_even = np.concatenate([maxes[SELLER], maxes[BUYER]])
    max_odd = np.concatenate([maxes[BUYER], maxes[SELLER]])
    any_max = bool(max_even.any())
    out = (pol_s.copy(), pol_b.copy()) if any_max and record else pols
    rank = _rank(protocol)

    nxt = np.zeros((2 * n, P, _K))  # outcome at move m+1 for each offer level on the table
    for m in range(2 * T - 1, -1, -1):
        accept_val = _accept_values(protocol, m)
        nxt = _survived(protocol, m, nxt)
        role = m % 2  # 0: first mover's move, 1: second mover's
        if m == 0:
            rows = slice(0, 1)
        else:
            t = (m - 1) // 2
            rows = qtable.round_rows(protocol, t)
        pi = (stacked_odd if role else stacked_even)[:, role, rows, :]  # (2n, r, A)
        r = pi.shape[1]
        if any_max:
            movers = mover_odd if role else mover_even
            maxing = max_odd if role else max_even
            legal = protocol.legal(m)
            q = np.zeros((2 * n, r, A, _K))
            q[:, :, :P, :] = nxt[:, None, :, :]
            if m > 0:
                q[:, :, P, :] = accept_val
            choice = _choose(q, legal, movers, rank)
            onehot = np.zeros((2 * n, r, A))
            np.put_along_axis(onehot, choice[..., None], 1.0, axis=-1)
            pi = np.where(maxing[:, None, None], onehot, pi)
            if record:
                for side in (SELLER, BUYER):
                    idx = np.flatnonzero(maxing & (movers == side))
                    out[side][idx % n, role, rows, :] = onehot[idx]
        val = pi[:, :, :P] @ nxt  # (2n, r, K)
        if m > 0:
            val += pi[:, :, P, None] * accept_val
        nxt = val
    root = nxt[:, 0, :]  # (2n, K)
    return np.stack([root[:n], root[n:]], axis=1), out[0], out[1]


def _batch(x: np.ndarray) -> tuple[np.ndarray, bool]:
    return (x, True) if x.ndim == 4 else (x[None], False)


# --- public API -------------------------------------------------------------------------------
def values(
    seller_policy: np.ndarray,
    buyer_policy: np.ndarray,
    protocol: Protocol,
    first: int | str,
) -> tuple[float, float]:
    """Exact expected two-agent rewards ``(seller_value, buyer_value)``.

    ``first`` is :data:`SELLER`/:data:`BUYER` (or ``"seller"``/``"buyer"``).
    """
    f = side_index(first) if isinstance(first, str) else int(first)
    s, _ = _batch(check_policy(seller_policy, protocol, "seller policy"))
    b, _ = _batch(check_policy(buyer_policy, protocol, "buyer policy"))
    if s.shape[0] != 1 or b.shape[0] != 1:
        raise ValueError("values() takes one policy per side; use outcomes() for batches")
    no = np.zeros(1, bool)
    root, _, _ = _sweep(s, b, protocol, no, no)
    return float(root[0, f, _SELLER]), float(root[0, f, _BUYER])


def outcomes(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, *, policies: bool = False
) -> np.ndarray:
    """Expected outcomes for both first movers: ``(2, 3)`` (or ``(n, 2, 3)`` for a batch).

    Axis 1 (or 0) is the first mover (SELLER, BUYER); the last axis holds
    Seller reward, Buyer reward, deal probability. Arguments are Q-tables
    (played greedily, see :func:`~market.game.policies.greedy_policy`) unless ``policies=True``.
    """
    s, batched = _batch(as_policy(seller, protocol, policies, "seller"))
    b, _ = _batch(as_policy(buyer, protocol, policies, "buyer"))
    s, b = np.broadcast_arrays(s, b)
    no = np.zeros(s.shape[0], bool)
    root, _, _ = _sweep(s, b, protocol, no, no)
    return root if batched else root[0]


def best_response(
    opponent_policy: np.ndarray, side: int | str, protocol: Protocol
) -> tuple[float, float, np.ndarray]:
    """Best response of ``side`` to a fixed ``opponent_policy`` (of the other side).

    Returns ``(value_if_seller_first, value_if_buyer_first, br_policy)``:
    ``side``'s exact best-response values and a deterministic, role-aware
    best-response policy ``(2, S, A)`` (ties as in :func:`spe`; rows the
    game never reaches hold the first legal action in that tie-break order).
    """
    me = side_index(side) if isinstance(side, str) else int(side)
    opp, batched = _batch(check_policy(opponent_policy, protocol, "opponent policy"))
    if batched:
        raise ValueError("best_response() takes one opponent policy of shape (2, S, A)")
    mine = _default_policy(protocol, me)[None]
    pol_s, pol_b = (mine, opp) if me == SELLER else (opp, mine)
    yes, no = np.ones(1, bool), np.zeros(1, bool)
    root, out_s, out_b = _sweep(
        pol_s, pol_b, protocol, yes if me == SELLER else no, yes if me == BUYER else no
    )
    br = (out_s if me == SELLER else out_b)[0]
    return float(root[0, SELLER, me]), float(root[0, BUYER, me]), br


def nash_conv(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, *, policies: bool = False
) -> float | np.ndarray:
    """NashConv: each side's gain from switching to its best response, summed,
    averaged over both first-mover assignments (0 at an equilibrium).

    ``seller``/``buyer`` are Q-tables ``(S, A)``, ``(R, S, A)`` played
    greedily (ties split uniformly, see :func:`~market.game.policies.greedy_policy`), or, with
    ``policies=True``, policies ``(2, S, A)``. A leading batch axis
    (``(n, R, S, A)`` tables or ``(n, 2, S, A)`` policies) gives an ``(n,)``
    array in one sweep; otherwise a float.
    """
    return _nash_conv_parts(seller, buyer, protocol, policies)["nash_conv"]


def _nash_conv_parts(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, policies: bool
) -> dict[str, Any]:
    """Values, best-response values and gains per side and first mover, in one sweep."""
    s, batched = _batch(as_policy(seller, protocol, policies, "seller"))
    b, _ = _batch(as_policy(buyer, protocol, policies, "buyer"))
    s, b = np.broadcast_arrays(s, b)
    n = s.shape[0]
    # Three copies: as given, Seller best-responding, Buyer best-responding.
    ps, pb = np.concatenate([s, s, s]), np.concatenate([b, b, b])
    z, o = np.zeros(n, bool), np.ones(n, bool)
    root, _, _ = _sweep(
        ps, pb, protocol, np.concatenate([z, o, z]), np.concatenate([z, z, o]), record=False
    )
    base, br_s, br_b = root[:n], root[n : 2 * n], root[2 * n :]
    value = base[:, :, :2]  # (n, first, side)
    br = np.stack([br_s[:, :, _SELLER], br_b[:, :, _BUYER]], axis=-1)  # (n, first, side)
    gain = np.maximum(br - value, 0.0)  # clip float noise; a best response never loses
    nc = gain.sum(axis=-1).mean(axis=-1)
    parts = {"value": value, "best_response": br, "gain": gain, "deal": base[:, :, _DEAL],
             "nash_conv": nc}
    if not batched:
        parts = {k: (float(v[0]) if k == "nash_conv" else v[0]) for k, v in parts.items()}
    return parts


def report(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, *, policies: bool = False
) -> dict[str, Any]:
    """Everything the ``evaluate`` command prints, for one pair of tables or policies.

    ``value``, ``best_response``, ``gain``: ``[first][side]`` nested lists
    (first mover and side both ordered Seller, Buyer); ``deal``:
    probability of a deal per first mover; ``nash_conv``: float.
    """
    parts = _nash_conv_parts(seller, buyer, protocol, policies)
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in parts.items()}


def _default_policy(protocol: Protocol, side: int) -> np.ndarray:
    """Deterministic filler for rows a sweep never reaches: first legal action by rank."""
    legal = legal_rows(protocol)
    key = np.where(legal, _rank(protocol)[side], np.inf)
    pol = np.zeros((qtable.n_rows(protocol), protocol.n_actions))
    pol[np.arange(qtable.n_rows(protocol)), key.argmin(axis=-1)] = 1.0
    pol[~legal] = 0.0
    return np.stack([pol, pol])


@lru_cache(maxsize=64)
def _spe_cached(protocol: Protocol) -> tuple[np.ndarray, np.ndarray]:
    s = _default_policy(protocol, SELLER)[None]
    b = _default_policy(protocol, BUYER)[None]
    yes = np.ones(1, bool)
    _, out_s, out_b = _sweep(s, b, protocol, yes, yes)
    return out_s[0], out_b[0]


def spe(protocol: Protocol) -> tuple[np.ndarray, np.ndarray]:
    """A pure subgame-perfect equilibrium ``(seller_policy, buyer_policy)``, each ``(2, S, A)``.

    Backward induction: every mover, at every reachable state, picks the
    action with the highest own expected reward. Tie-break (fixed,
    deterministic): among actions within :data:`TIE_TOL` of the best, the
    one best for the opponent (so an indifferent responder accepts rather
    than walks away), then accept, then offers from the mover's most
    favourable level, then reject. In this game the first mover makes the
    last offer, so it asks for everything at once (Seller level P, Buyer
    level 1) and the second mover accepts at move 1. Rows no state reaches
    (the first mover's last-round rows, the second mover's start row) hold
    the first legal action in the same order. Cached per protocol; copies
    are returned.
    """
    s, b = _spe_cached(protocol)
    return s.copy(), b.copy()


def subgame_gaps(
    seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, *, policies: bool = False
) -> np.ndarray:
    """How far a pair is from subgame perfection: each side's largest one-shot deviation gain.

    In every subgame, reachable or not (every move ``m`` and offer ``p`` on
    the table, for both first movers), the mover's best single action
    followed by the pair's own play is compared with what the pair's play
    gives it there. By the one-shot deviation principle (a finite game), the
    pair is subgame perfect exactly when both gains are 0; NashConv only
    looks at the subgames the pair reaches.

    Returns ``(2, 2)`` gains ``[first mover][side]`` (or ``(n, 2, 2)`` for a
    batch). Arguments as :func:`nash_conv`.
    """
    s, batched = _batch(as_policy(seller, protocol, policies, "seller"))
    b, _ = _batch(as_policy(buyer, protocol, policies, "buyer"))
    s, b = np.broadcast_arrays(s, b)
    n = s.shape[0]
    P, T, A = protocol.prices, protocol.rounds, protocol.n_actions
    first = np.repeat([SELLER, BUYER], n)
    stacked = (np.concatenate([s, b]), np.concatenate([b, s]))  # movers at even, odd moves
    movers = (first, 1 - first)
    gaps = np.zeros((2 * n, 2))  # [element][role of the mover: 0 first, 1 second]
    nxt = np.zeros((2 * n, P, _K))
    idx = np.arange(2 * n)
    for m in range(2 * T - 1, -1, -1):
        accept_val = _accept_values(protocol, m)
        nxt = _survived(protocol, m, nxt)
        role = m % 2
        rows = slice(0, 1) if m == 0 else qtable.round_rows(protocol, (m - 1) // 2)
        pi = stacked[role][:, role, rows, :]  # (2n, r, A)
        r = pi.shape[1]
        q = np.zeros((2 * n, r, A, _K))
        q[:, :, :P, :] = nxt[:, None, :, :]
        if m > 0:
            q[:, :, P, :] = accept_val
        own = q[idx, :, :, movers[role]]  # (2n, r, A)
        played = (pi * own).sum(axis=-1)
        legal = protocol.legal(m)
        best = np.where(legal, own, -np.inf).max(axis=-1)
        scale = np.where(legal, np.abs(own), 0.0).max(axis=-1)  # the node's own scale
        gain = best - played
        gain = np.where(gain > TIE_TOL * scale, gain, 0.0)  # a tie at the node is no gain
        gaps[:, role] = np.maximum(gaps[:, role], gain.max(axis=-1))
        val = pi[:, :, :P] @ nxt
        if m > 0:
            val += pi[:, :, P, None] * accept_val
        nxt = val
    out = np.zeros((n, 2, 2))  # [pair][first][side]
    for f in (SELLER, BUYER):
        part = gaps[f * n : (f + 1) * n]
        out[:, f, f] = part[:, 0]  # the first mover's own moves
        out[:, f, 1 - f] = part[:, 1]
    return out if batched else out[0]


def _accept_values(protocol: Protocol, move: int) -> np.ndarray:
    """(P, K) outcome vectors of accepting level ``1..P`` at ``move``: rewards (discounted
    and less the costs of the offers made before, if the game has them) and a deal."""
    P = protocol.prices
    out = np.zeros((P, _K))
    out[:, _SELLER], out[:, _BUYER] = protocol.deal_rewards(np.arange(1, P + 1), move)
    out[:, _DEAL] = 1.0
    return out


def _survived(protocol: Protocol, move: int, nxt: np.ndarray) -> np.ndarray:
    """The outcome vectors after an offer at ``move``, ``nxt`` (what move ``move + 1``
    leads to), weighed by the chance that the talks survive it: a counter-offer (``move
    >= 1``) is followed by a breakdown with probability Q, worth 0 to both and no deal."""
    keep = moves.survival(move, protocol.pressure)  # the game's rule of a breakdown
    return nxt * keep if keep < 1.0 else nxt


def deals(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol, first: int, *,
          policies: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Where a pair's play ends, per element of a batch: ``(level, move)`` arrays ``(n,)``.

    ``level``: the deal's level (0: no deal), ``move``: the move that ended
    the negotiation; both -1 where some move on the way is not a sure action
    (a mixed policy, or a greedy tie), whose outcome is a lottery. Unlike
    :func:`outcomes` (expected rewards) this tells *which* deal and *when*,
    which a discounted game needs to place a pair beside its subgame-perfect
    outcomes (:func:`~market.game.outcome_sets.spe_outcomes`). Arguments as :func:`outcomes`.
    """
    s, _ = _batch(as_policy(seller, protocol, policies, "seller"))
    b, _ = _batch(as_policy(buyer, protocol, policies, "buyer"))
    s, b = np.broadcast_arrays(s, b)
    n, P, T = s.shape[0], protocol.prices, protocol.rounds
    idx = np.arange(n)
    level, move = np.full(n, -1), np.full(n, -1)
    live = np.ones(n, bool)
    offer = np.zeros(n, dtype=np.int64)
    for m in range(2 * T):
        role = m % 2
        pol = (s if (first ^ role) == SELLER else b)[:, role]
        rows = qtable.move_row(P, m, offer)
        probs = pol[idx, rows]  # (n, A)
        a = probs.argmax(axis=1)
        sure = probs[idx, a] > 1.0 - TIE_TOL
        live &= sure
        ended = live & (a >= P)
        level[ended] = np.where(a[ended] == P, offer[ended] + 1, 0)
        move[ended] = m
        live &= ~ended
        offer = np.where(a < P, a, offer)
    return level, move


def exact_test(
    seller: np.ndarray,
    buyer: np.ndarray,
    protocol: Protocol,
    episodes: int = 1000,
    *,
    policies: bool = False,
    first: int = SELLER,
) -> dict[str, float]:
    """Exact expectation of a greedy test run of ``episodes`` episodes.

    The test alternates the first mover every episode starting with
    ``first``, so with an even count each side moves first in half of them.
    Returns the expected totals over the run: ``seller_wallet`` (sum of deal
    levels, the document's wallet), ``deals``, ``seller_reward`` and
    ``buyer_reward`` (sums of two-agent rewards), with the split of episodes.
    Arguments are Q-tables played greedily unless ``policies=True``.
    """
    if int(episodes) < 0:
        raise ValueError(f"episodes must be >= 0 (got {episodes})")
    out = outcomes(seller, buyer, protocol, policies=policies)
    if out.ndim != 2:
        raise ValueError("exact_test() takes one pair of tables; loop or use outcomes()")
    # which levels are played does not depend on time costs: the wallet counts them undiscounted
    played = (outcomes(seller, buyer, protocol.undiscounted(), policies=policies)
              if protocol.discounted else out)
    f = side_index(first) if isinstance(first, str) else int(first)
    n_first = np.zeros(2)
    n_first[f] = (episodes + 1) // 2
    n_first[1 - f] = episodes // 2
    tot = n_first @ out  # (K,)
    levels = n_first @ played
    return {
        "episodes": int(episodes),
        "seller_first_episodes": int(n_first[SELLER]),
        "buyer_first_episodes": int(n_first[BUYER]),
        "seller_wallet": float(levels[_SELLER] * protocol.prices),
        "deals": float(tot[_DEAL]),
        "seller_reward": float(tot[_SELLER]),
        "buyer_reward": float(tot[_BUYER]),
    }


#: measured on 2 cores, whole ``evaluate`` command, fresh process: the exact evaluation peaks
#: at about 190 bytes per policy cell of one side (2 x S x A cells) and takes 0.4-0.75 us per
#: cell, growing with the size (2.3 s at 3.6 million cells, P = 300, T = 20; 14.6 s at 24
#: million, P = 1000, T = 12; 29.9 s at 40 million, P = 1000, T = 20); the outcome sets under
#: time pressure about 3 ns per unit of their work (1.3-1.6 s at P = 100, T = 70)
BYTES_PER_CELL = 200
SECONDS_PER_CELL = 0.6e-6
SECONDS_START = 0.5
SECONDS_PER_OUTCOME_WORK = 3e-9


def cost(protocol: Protocol) -> tuple[int, float]:
    """The ``evaluate`` command's peak memory (bytes) and time (seconds) on this game: the
    exact evaluation of a pair of policies, the greedy test's expectation, the subgame gaps
    and, where affordable, the subgame-perfect outcome sets (checked against measured runs
    by ``run.py bench --only training``)."""
    cells = 2 * qtable.n_rows(protocol) * protocol.n_actions
    seconds = SECONDS_START + SECONDS_PER_CELL * cells
    if protocol.timed and outcome_sets.outcome_sets_affordable(protocol):
        seconds += SECONDS_PER_OUTCOME_WORK * outcome_sets.work(protocol)
    return cells * BYTES_PER_CELL, seconds


__all__ = [
    "TIE_TOL",
    "best_response",
    "cost",
    "exact_test",
    "nash_conv",
    "outcomes",
    "report",
    "spe",
    "subgame_gaps",
    "values",
]
