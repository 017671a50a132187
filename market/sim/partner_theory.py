"""The mean-field theory of partner choice (Weisbuch, Kirman and Herreiner 2000): when Buyers
become loyal.

A Buyer chooses among ``n`` Sellers who each earn her the same profit ``pi``
per visit (a share of the price range) and never run out. Her preferences
follow ``J_j <- (1 - gamma) J_j + pi [she visited j]``, and she visits ``j``
with probability ``P_j = exp(beta J_j) / sum_k exp(beta J_k)``
(:mod:`market.sim.matching`). In the mean field the visits are replaced by
their probabilities, so a fixed point satisfies

    gamma J_j = pi P_j(J),   hence   sum_j J_j = pi / gamma.

- **Searching**: ``J_j = pi / (n gamma)`` for every Seller, ``y = 1/n``. The map's
  Jacobian there is ``(1 - gamma) I + (pi beta / n)(I - 11'/n)``; its largest
  eigenvalue passes 1 at ``beta = n gamma / pi``: above it searching is unstable.
  For two Sellers this is WKH's ``beta_c = 2 gamma / pi``.
- **Loyal**: one Seller preferred, the others alike: with ``x = J_1 - J_o``
  (``J_o`` the others'), ``P_1 = e^(beta x) / (e^(beta x) + n - 1)`` and

      x = (pi / gamma) (P_1 - (1 - P_1) / (n - 1)).

  For two Sellers this is ``Delta = (pi / gamma) tanh(beta Delta / 2)``, whose
  nonzero roots appear exactly at ``beta_c`` (a continuous transition). For
  ``n >= 3`` they appear at a smaller ``beta`` (:func:`loyal_onset`): between the
  two, searching and loyalty are both stable, and which one a Buyer shows
  depends on where she started (WKH's hysteresis).

The order parameter of a fixed point is ``y = sum_j J_j^2 / (sum_j J_j)^2 =
P_1^2 + (1 - P_1)^2 / (n - 1)``: ``1/n`` searching, towards 1 loyal.

- **Unequal profits** (two Sellers, ``pi_1 > pi_2``): with ``x = P_1`` the
  share of visits to the better Seller, ``gamma J_1 = pi_1 x``, ``gamma J_2 =
  pi_2 (1 - x)`` and

      x = 1 / (1 + exp(-(beta / gamma)(pi_1 x - pi_2 (1 - x)))).

  Below :func:`worse_onset` the one fixed point has most visits on the better
  Seller; above it a second stable point appears with most on the worse one,
  and a Buyer who started loyal to the worse Seller stays there although the
  other earns her more (WKH's hysteresis). :func:`settle` runs the mean-field
  map itself from a start.
"""

from __future__ import annotations

import math

import numpy as np


def beta_c(gamma: float, profit: float, sellers: int = 2) -> float:
    """Where searching stops being stable: ``n gamma / pi`` (``2 gamma / pi`` for two
    Sellers, WKH's critical choice intensity)."""
    return sellers * gamma / profit


def _gap(x: np.ndarray | float, beta: float, gamma: float, profit: float, n: int
         ) -> np.ndarray | float:
    """``(pi / gamma)(P_1 - (1 - P_1)/(n - 1)) - x``: zero at a fixed point with gap ``x``."""
    p1 = 1.0 / (1.0 + (n - 1) * np.exp(-beta * np.asarray(x)))
    return profit / gamma * (p1 - (1.0 - p1) / (n - 1)) - x


def loyal_gaps(beta: float, gamma: float, profit: float, sellers: int = 2) -> list[float]:
    """The positive gaps ``x = J_1 - J_o`` of the loyal fixed points at ``beta`` (none below the
    onset; for ``n >= 3`` two between the onset and ``beta_c``: the larger stable), found by
    a fine scan of ``(0, pi / gamma]`` and bisection."""
    top = profit / gamma
    xs = np.linspace(top * 1e-6, top, 4001)
    g = _gap(xs, beta, gamma, profit, sellers)
    roots = []
    for i in np.flatnonzero(np.sign(g[:-1]) * np.sign(g[1:]) < 0):
        lo, hi = xs[i], xs[i + 1]
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if np.sign(_gap(mid, beta, gamma, profit, sellers)) == np.sign(g[i]):
                lo = mid
            else:
                hi = mid
        roots.append(0.5 * (lo + hi))
    return roots


def order_parameter(gap: float, beta: float, sellers: int) -> float:
    """``y`` of the fixed point with gap ``x`` (0: searching, ``1/n``)."""
    p1 = 1.0 / (1.0 + (sellers - 1) * math.exp(-beta * gap))
    return p1 * p1 + (1.0 - p1) ** 2 / (sellers - 1)


def loyal_y(beta: float, gamma: float, profit: float, sellers: int = 2) -> float:
    """``y`` of the stable loyal fixed point (the largest gap) at ``beta``; NaN where there is
    none."""
    gaps = loyal_gaps(beta, gamma, profit, sellers)
    return order_parameter(max(gaps), beta, sellers) if gaps else math.nan


def loyal_onset(gamma: float, profit: float, sellers: int = 2) -> float:
    """The smallest ``beta`` with a loyal fixed point: ``beta_c`` for two Sellers, below it for
    more (found by bisection on whether :func:`loyal_gaps` has a root)."""
    hi = beta_c(gamma, profit, sellers) * (1.0 + 1e-9)
    if sellers == 2:
        return beta_c(gamma, profit, sellers)
    lo = hi / sellers
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if loyal_gaps(mid, gamma, profit, sellers):
            hi = mid
        else:
            lo = mid
    return hi


def mean_field_y(beta: float, gamma: float, profit: float, sellers: int = 2,
                 start: str = "searching") -> float:
    """The order parameter a Buyer settles at in the mean field from ``start``: ``searching``
    (no preference: ``1/n`` until searching turns unstable at ``beta_c``, then the loyal
    point) or ``loyal`` (the loyal point wherever it exists, ``1/n`` below its onset)."""
    loyal = loyal_y(beta, gamma, profit, sellers)
    if start == "loyal":
        return 1.0 / sellers if math.isnan(loyal) else loyal
    if beta <= beta_c(gamma, profit, sellers) or math.isnan(loyal):
        return 1.0 / sellers
    return loyal


def _unequal(x: np.ndarray | float, beta: float, gamma: float, profits: tuple[float, float]
             ) -> np.ndarray | float:
    """``P_1(x) - x`` for two Sellers of unequal profits: zero at a fixed point."""
    p1, p2 = profits
    z = beta / gamma * (p1 * np.asarray(x) - p2 * (1.0 - np.asarray(x)))
    return 1.0 / (1.0 + np.exp(-z)) - x


def unequal_fixed_points(beta: float, gamma: float, profits: tuple[float, float]
                         ) -> list[tuple[float, bool]]:
    """The fixed points ``x`` (share of visits to Seller 1) of two Sellers earning ``profits``,
    each with whether it is stable (the map crosses ``x`` from above), in increasing order:
    one below :func:`worse_onset`, three above it. Found on a fine grid by bisection; a
    grid point where the map equals ``x`` to the last bit (``x = 1/2`` with equal profits,
    an end at a large ``beta``) is a root as it is."""
    xs = np.linspace(0.0, 1.0, 20001)
    g = _unequal(xs, beta, gamma, profits)
    sign = np.sign(g)
    out = []
    for i in range(xs.size):
        left = sign[i - 1] if i > 0 else 1.0
        right = sign[i + 1] if i + 1 < xs.size else -1.0
        if sign[i] == 0.0:
            out.append((float(xs[i]), bool(left > 0 and right < 0)))
        elif i + 1 < xs.size and sign[i] * sign[i + 1] < 0:
            lo, hi = xs[i], xs[i + 1]
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                if np.sign(_unequal(mid, beta, gamma, profits)) == sign[i]:
                    lo = mid
                else:
                    hi = mid
            out.append((0.5 * (lo + hi), bool(sign[i] > 0)))
    return out


def worse_onset(gamma: float, profits: tuple[float, float]) -> float:
    """The smallest ``beta`` at which loyalty to the worse Seller is a stable fixed point
    (bisection on the count of :func:`unequal_fixed_points`)."""
    lo, hi = 1e-6, 1.0
    for _ in range(64):
        if len(unequal_fixed_points(hi, gamma, profits)) >= 3:
            break
        hi *= 2.0
    else:
        raise ValueError(f"no loyalty to the worse Seller below beta = {hi:g}")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if len(unequal_fixed_points(mid, gamma, profits)) >= 3:
            hi = mid
        else:
            lo = mid
    return hi


def settle(beta: float, gamma: float, profits: tuple[float, ...], start: tuple[float, ...],
           periods: int = 20000) -> float:
    """The share of visits to Seller 0 where the mean-field map ``J_j <- (1 - gamma) J_j +
    pi_j P_j(J)`` settles from preferences ``start`` (one per Seller)."""
    pi = np.asarray(profits, float)
    j = np.asarray(start, float)
    for _ in range(periods):
        z = np.exp(beta * (j - j.max()))
        p = z / z.sum()
        j = (1.0 - gamma) * j + pi * p
    z = np.exp(beta * (j - j.max()))
    return float(z[0] / z.sum())
