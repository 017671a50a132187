"""Every pure subgame-perfect outcome of the two-agent game, by backward induction over sets.

:func:`market.game.evaluation.spe` finds one subgame-perfect equilibrium (ties
broken one way); a game may have several, which reach different deals (a
responder offered its zero-surplus price gets 0 whether it accepts or
rejects). :func:`spe_outcome_offers` finds the outcome of every one; with
time pressure the sets run over levels and moves, so their work grows as
``T^2 P^2`` and :func:`outcome_sets_affordable` says where they are left out.
"""

from __future__ import annotations

import numpy as np

from market.game import moves
from market.game.numeric import TIE_TOL
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Protocol


def spe_outcomes(protocol: Protocol) -> dict[str, list[tuple[int, float, float]]]:
    """Every pure subgame-perfect outcome of the game, per first mover, as ``(level, seller
    reward, buyer reward)`` (:func:`spe_outcome_offers` says on which offer each deal is made).
    """
    return {side: [(level, s, b) for level, _, s, b in found]
            for side, found in spe_outcome_offers(protocol).items()}


def spe_outcome_offers(protocol: Protocol
                      ) -> dict[str, list[tuple[int, int | None, float, float]]]:
    """Every pure subgame-perfect outcome of the game, per first mover.

    Backward induction over sets: in each subgame (move, offer on the table)
    the outcomes some pure subgame-perfect equilibrium can lead to. A child's
    outcome is reachable when the mover weakly prefers it to the worst the
    other children can be made to give it (the continuations of different
    subgames are chosen independently). Outcomes are ``(level, seller
    reward, buyer reward)`` with level 0 for no deal. Several outcomes arise
    because a responder offered its zero-surplus price gets 0 whether it
    accepts or rejects. Returned as ``(level, offer, seller reward, buyer
    reward)``; ``offer`` is the offer the deal is made on (counted from 0, so
    its rewards are the level's discounted ``offer`` times, less ``offer``
    costs), None without time pressure, where outcomes are levels alone.
    Where the talks may break down, an outcome is the deal the equilibrium's
    path makes if they do not break down first; the movers compare outcomes
    by their expectation.

    Without time costs an outcome is its level (ties are exact in levels, so
    the sets are exact); with them it is a level *and* the move it was
    accepted at, since the same level is worth less later: the sets are over
    both, and one level may appear at several values. In each subgame the
    outcomes are weighed as its mover expects them from there (the chance to
    survive the counter-offers from that node on, not from the opening), and
    values within :data:`TIE_TOL` of each other, relative to the largest value
    reachable from the node, are ties, as in :func:`~market.game.evaluation.spe` and
    :func:`~market.game.evaluation.subgame_gaps` (with time costs, ``4/6 * 0.8`` and ``5/6 * 0.64``
    are equal but for their last bit). Sets are boolean rows
    over outcomes. The offer children are the same for every offer on the
    table, so per move only the two best of their worst values matter (a
    child's bar is the best worst value among the *other* children): the
    work is ``O(T P^2)`` outcomes-wide, ``O(T^2 P^2)`` with time costs.
    """
    P, T = protocol.prices, protocol.rounds
    values, slot_of = _outcome_values(protocol)
    slots, width = int(slot_of[-1]) + 1, values.shape[1]
    pressure = protocol.pressure

    result: dict[str, list[tuple[int, int | None, float, float]]] = {}
    for f in (SELLER, BUYER):
        after = np.zeros((P, width), bool)  # outcome sets at move m + 1, per offer 1..P
        reach = np.ones(width)  # the chance, from the node at move m, to get to each outcome
        for m in range(2 * T - 1, -1, -1):
            # each outcome as the mover expects it from this node: its worth times the chance
            # to survive the offers from here to it (the game's rule, move by move);
            # compared relative to the node
            reach = np.where(slot_of > m, reach * moves.survival(m, pressure), reach)
            r = values[f if m % 2 == 0 else 1 - f] * reach
            ahead = slot_of >= m if slots > 1 else np.ones(width, bool)  # from here on
            here = (m if slots > 1 else 0) * (P + 1)  # accepting now: this move's outcomes
            after = _sets_at(m, after[protocol.legal(m)[:P]], r, here, P,
                             TIE_TOL * np.abs(r[ahead]).max())
        result[SIDE_NAMES[f]] = [
            (int(o % (P + 1)), (int(o // (P + 1)) - 1 if slots > 1 and o % (P + 1) else None),
             float(values[SELLER, o]), float(values[BUYER, o]))
            for o in np.flatnonzero(after[0])]
    return result


def _outcome_values(protocol: Protocol) -> tuple[np.ndarray, np.ndarray]:
    """Each outcome's rewards ``[side][outcome]`` (0 for no deal) and the move it is accepted
    at: outcome ``o = slot * (P + 1) + level``, one slot per move with time pressure (the
    same level is worth less later), a single slot without."""
    P = protocol.prices
    slots = 2 * protocol.rounds if protocol.timed else 1
    levels = np.arange(P + 1)
    values = np.zeros((2, slots * (P + 1)))
    for slot in range(slots):
        part = slice(slot * (P + 1) + 1, (slot + 1) * (P + 1))
        values[SELLER, part], values[BUYER, part] = protocol.deal_rewards(levels[1:], slot)
    return values, np.repeat(np.arange(slots), P + 1)


def _sets_at(m: int, offers: np.ndarray, r: np.ndarray, here: int, P: int, tol: float
             ) -> np.ndarray:
    """The outcome sets of the subgames at move ``m``, one row per offer on the table (one
    row at the opening): ``offers`` the sets of the offer children (shared by every offer on
    the table), ``r`` each outcome as the mover values it from here, ``here`` where this
    move's acceptances start, ``tol`` the tie tolerance at this node."""
    width = r.shape[0]
    worst = np.where(offers, r, np.inf).min(axis=1)
    top = int(worst.argmax()) if len(worst) else -1
    w1 = worst[top] if top >= 0 else -np.inf
    rest = np.delete(worst, top) if top >= 0 else worst
    w2 = rest.max() if len(rest) else -np.inf
    unique = top >= 0 and w2 < w1 - tol
    all_offers = offers.any(axis=0)
    others = np.delete(offers, top, axis=0).any(axis=0) if unique else all_offers
    tables = [0] if m == 0 else range(1, P + 1)
    now = np.zeros((len(tables), width), bool)
    for i, p in enumerate(tables):
        acc = here + p
        kids = [w1] if m == 0 else [w1, r[acc], r[0]]  # best offer, accept p, reject
        best = max(kids)
        if m > 0:  # accept {p} and reject {0}: bars from every other child
            now[i, acc] = r[acc] >= max(w1, r[0]) - tol
            now[i, 0] = r[0] >= max(w1, r[acc]) - tol
        if top < 0:
            continue
        second = max(w2, *(k for k in kids[1:])) if m > 0 else w2
        if unique and w1 > second + tol:  # the best offer child: held to the second
            now[i] |= ((others & (r >= w1 - tol))
                       | (offers[top] & (r >= second - tol)))
        else:  # every offer child is held to the best worst value
            now[i] |= all_offers & (r >= best - tol)
    return now


#: with time pressure the outcome sets run over levels and moves, O(T^2 P^2): computed up to
#: this much work (P x T about 7,000: measured 1.5-2.2 s here), left out above it
OUTCOME_SET_WORK_MAX = 2 * 10**8


def outcome_sets_affordable(protocol: Protocol) -> bool:
    """Whether :func:`spe_outcome_offers` is cheap at this size (always without time
    pressure, where it is O(T P^2) and inside :func:`~market.game.evaluation.cost`)."""
    return not protocol.timed or work(protocol) <= OUTCOME_SET_WORK_MAX


def work(protocol: Protocol) -> int:
    """The outcome sets' work under time pressure (levels and moves, squared)."""
    return 4 * protocol.prices**2 * protocol.rounds**2


__all__ = ["OUTCOME_SET_WORK_MAX", "outcome_sets_affordable", "spe_outcome_offers",
           "spe_outcomes"]
