"""Where a rule-based strategy may place its offers, even when its range is empty.

An observation's acceptable range ``lo..hi`` can leave the grid (a Seller
whose cost is above every price has ``lo = P + 1``) or be empty (``lo > hi``
when both bounds fall between two coarse levels). The protocol still forces
an offer at move 0, so a strategy needs one level it can always name. This
helper clips the range to ``1..P`` and, when nothing is left, collapses it
onto the side's reservation (Seller: its floor, Buyer: its ceiling): the one
level that, if the grid holds it at all, loses the trader nothing.
"""

from __future__ import annotations

import numpy as np

from market.game.jit import njit
from market.game.rules import SELLER, Observation


def offer_bounds(side: int, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest level the mover may offer, with ``1 <= lo <= hi <= P``."""
    P = obs.protocol.prices
    lo = np.clip(np.asarray(obs.lo, dtype=np.int64), 1, P)
    hi = np.clip(np.asarray(obs.hi, dtype=np.int64), 1, P)
    empty = lo > hi
    if side == SELLER:
        hi = np.where(empty, lo, hi)
    else:
        lo = np.where(empty, hi, lo)
    return lo, hi


@njit(cache=True, inline="always")
def offer_bounds1(side: int, lo: int, hi: int, prices: int) -> tuple[int, int]:
    """:func:`offer_bounds` for one row, as the compiled market engine runs it."""
    lo, hi = min(max(lo, 1), prices), min(max(hi, 1), prices)
    if lo > hi:
        if side == SELLER:
            hi = lo
        else:
            lo = hi
    return lo, hi


def extreme_and_reservation(side: int, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """The mover's opening level and the level it concedes down (or up) to."""
    lo, hi = offer_bounds(side, obs)
    return (hi, lo) if side == SELLER else (lo, hi)


def per_member(value: object, n_members: int, name: str) -> np.ndarray:
    """A positive finite parameter as one value per member (scalar or length-n array)."""
    arr = np.asarray(value, dtype=float)
    try:
        arr = np.broadcast_to(arr, (n_members,)).copy()
    except ValueError:
        raise ValueError(
            f"{name} must be a number or one value per member ({n_members}), got shape {arr.shape}"
        ) from None
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ValueError(f"{name} must be a positive finite number (got {value!r})")
    return arr
