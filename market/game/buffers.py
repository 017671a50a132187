"""The arrays the compiled loops allocate, made by small cached functions.

The negotiation loops (:mod:`market.game.loops`) and the market's step
(:mod:`market.sim.kernel`) are templates, compiled anew for each set of
strategies (a user's new rule). numba compiles numpy's allocation functions
(``np.full``, ``np.zeros``, ``np.arange``, ...) into every function that
calls them, afresh in every process that compiles it: about a second and a
half of a new engine's compile. Called from here instead, they are loaded
from numba's cache like any other compiled function.
"""

from __future__ import annotations

import numpy as np

from market.compiled.jit import njit


@njit(cache=True)
def record_arrays(n: int, moves: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch record's arrays for ``n`` negotiations: actions (-1: not played), the
    agreed level (0: none) and the number of moves."""
    return (np.full((n, moves), -1, dtype=np.int32), np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64))


@njit(cache=True)
def table_arrays(n: int, groups: int) -> tuple[np.ndarray, ...]:
    """The breadth-first loop's state: each side's last and previous offers ``(2, n)``, the
    chosen actions, the running negotiations (all, in order), a count per population and
    ``n`` keys and slots to sort rows by population."""
    return (np.zeros((2, n), dtype=np.int64), np.zeros((2, n), dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.arange(n), np.zeros(groups + 1, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))


@njit(cache=True)
def ints(n: int, value: int) -> np.ndarray:
    """``n`` integers, each ``value``."""
    return np.full(n, value, dtype=np.int64)


@njit(cache=True)
def floats(rows: int, n: int) -> np.ndarray:
    """A ``(rows, n)`` array of zeros."""
    return np.zeros((rows, n))


__all__ = ["floats", "ints", "record_arrays", "table_arrays"]


#: what an order book shows a mover (``seat``'s last array, in this order): the best standing
#: quote of each side (a Seller's, then a Buyer's; 0: none), the lowest and highest levels
#: traded in the previous trading period (0: none), and the steps since the last trade (or
#: since the period opened): a rule reads them as its
#: :class:`~market.game.rules.Turn`'s ``own_best``, ``prior_low``, ``prior_high``, ``quiet``
BOOK_VIEW = ("best_ask", "best_bid", "prior_low", "prior_high", "quiet")


@njit(cache=True)
def no_book() -> np.ndarray:
    """``seat``'s book where there is none (bilateral bargaining): every field -1."""
    return np.full(len(BOOK_VIEW), -1, np.int64)
