"""Competitive equilibrium, efficiency and surplus split against hand-worked examples."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market.sim.yardsticks import competitive_equilibrium, efficiency, supply_demand, surplus_split


@pytest.mark.parametrize(
    ("values", "costs", "quantity", "lo", "hi", "surplus"),
    [
        # textbook crossing: gains 7, 3, -1, -5 -> Q = 2; band [max(c2, v3), min(v2, c3)]
        ([10, 8, 6, 4], [3, 5, 7, 9], 2, 6, 7, 10),
        # order of the input does not matter
        ([4, 10, 6, 8], [9, 3, 7, 5], 2, 6, 7, 10),
        # a tie at the margin (v2 == c2) is a zero-surplus unit and counts; band is a point
        ([10, 7], [3, 7], 2, 7, 7, 7),
        # tie between the marginal buyer and the excluded one: band [6, 8]
        ([10, 6], [6, 8], 1, 6, 8, 4),
        # no crossing: nobody trades, the band is the gap between best value and best cost
        ([5, 4], [6, 9], 0, 5, 6, 0),
        # more buyers than sellers: the excluded buyer with value 9 bounds the band below
        ([10, 9, 8], [1], 1, 9, 10, 9),
        # everybody equal: all units trade at zero surplus, band is the common price
        ([5, 5, 5], [5, 5], 2, 5, 5, 0),
        # every value above every cost, equal sides: all trade, band between the margins
        ([60, 70, 80], [10, 20, 30], 3, 30, 60, 150),
    ],
)
def test_equilibrium_matches_hand_worked_examples(values, costs, quantity, lo, hi, surplus):
    eq = competitive_equilibrium(np.array(values), np.array(costs))
    assert eq.quantity == quantity
    assert (eq.price_lo, eq.price_hi) == (lo, hi)
    assert eq.max_surplus == surplus


def test_empty_side_has_no_market():
    eq = competitive_equilibrium(np.array([]), np.array([1.0, 2.0]))
    assert eq.quantity == 0 and eq.max_surplus == 0
    assert math.isnan(eq.price_lo) and math.isnan(eq.price_hi)


def _best_matching_surplus(values: list[int], costs: list[int]) -> int:
    """Brute force over every one-to-one assignment of buyers to sellers (or to nobody)."""
    best = 0
    n = len(values)
    options = [None, *range(len(costs))]
    for assign in itertools.product(options, repeat=n):
        used = [a for a in assign if a is not None]
        if len(used) != len(set(used)):
            continue
        gains = (max(values[i] - costs[a], 0) for i, a in enumerate(assign) if a is not None)
        best = max(best, sum(gains))
    return best


small = st.lists(st.integers(0, 10), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(values=small, costs=small)
def test_equilibrium_clears_the_market_and_max_surplus_is_optimal(values, costs):
    eq = competitive_equilibrium(np.array(values), np.array(costs))
    v, c = np.array(values), np.array(costs)
    assert eq.price_lo <= eq.price_hi
    for p in (eq.price_lo, eq.price_mid, eq.price_hi):
        # at a clearing price, Q lies between strict and weak demand, and strict and weak supply
        assert (v > p).sum() <= eq.quantity <= (v >= p).sum()
        assert (c < p).sum() <= eq.quantity <= (c <= p).sum()
    assert eq.max_surplus == _best_matching_surplus(values, costs)


def test_supply_and_demand_curves_are_sorted():
    demand, supply = supply_demand(np.array([3.0, 9.0, 1.0]), np.array([5.0, 2.0]))
    assert demand.tolist() == [9.0, 3.0, 1.0]
    assert supply.tolist() == [2.0, 5.0]


def test_efficiency_and_split():
    assert efficiency(5.0, 10.0) == 0.5
    assert math.isnan(efficiency(0.0, 0.0))  # nothing to gain: undefined, not 1 or 0
    assert surplus_split(3.0, 1.0) == (0.75, 0.25)
    assert all(math.isnan(x) for x in surplus_split(0.0, 0.0))
