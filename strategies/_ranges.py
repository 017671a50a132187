"""Where a rule-based strategy may place its offers, even when its range is empty.

An observation's acceptable range ``lo..hi`` can leave the grid (a Seller
whose cost is above every price has ``lo = P + 1``) or be empty (``lo > hi``
when both bounds fall between two coarse levels). The protocol still forces
an offer at move 0, so a strategy needs one level it can always name. This
helper clips the range to ``1..P`` and, when nothing is left, collapses it
onto the side's reservation (Seller: its floor, Buyer: its ceiling): the one
level that, if the grid holds it at all, loses the trader nothing.

:func:`offer_bounds1` is the rule, for one row, as compiled rules call it;
:func:`offer_bounds` runs that same compiled rule over a batch.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit
from market.game.rules import SELLER, Observation


@njit(cache=True, inline="always")
def offer_bounds1(side: int, lo: int, hi: int, prices: int) -> tuple[int, int]:
    """Lowest and highest level the mover may offer, with ``1 <= lo <= hi <= P``."""
    lo, hi = min(max(lo, 1), prices), min(max(hi, 1), prices)
    if lo > hi:
        if side == SELLER:
            hi = lo
        else:
            lo = hi
    return lo, hi


@njit(cache=True)
def _offer_bounds_all(side: int, lo: np.ndarray, hi: np.ndarray, prices: int,
                      out_lo: np.ndarray, out_hi: np.ndarray) -> None:
    for i in range(lo.size):
        out_lo[i], out_hi[i] = offer_bounds1(side, lo[i], hi[i], prices)


def offer_bounds(side: int, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """:func:`offer_bounds1` for every row of ``obs`` (for strategies that decide in batches)."""
    lo = np.ascontiguousarray(np.broadcast_to(obs.lo, (len(obs),)), dtype=np.int64)
    hi = np.ascontiguousarray(np.broadcast_to(obs.hi, (len(obs),)), dtype=np.int64)
    out_lo, out_hi = np.empty_like(lo), np.empty_like(hi)
    _offer_bounds_all(int(side), lo, hi, int(obs.protocol.prices), out_lo, out_hi)
    return out_lo, out_hi


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
