"""Value schedules a researcher names (``schedule``): their equilibria, how they fill a market,
and one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest

from market.sim import schedules
from market.sim.declared import SCHEDULES
from market.sim.model import MarketModel
from market.sim.yardsticks import competitive_equilibrium

# the module's table: name -> (p*, q*) per copy of the schedule
EQUILIBRIA = {"symmetric": (2.0, 6), "flat-supply": (2.0, 6), "flat-demand": (2.0, 6),
              "excess-demand": (3.25, 6)}


def test_the_declared_names_are_the_schedules():
    assert (schedules.DRAWN, *schedules.NAMED) == SCHEDULES
    assert set(EQUILIBRIA) == set(schedules.NAMED)


@pytest.mark.parametrize("name", list(EQUILIBRIA))
@pytest.mark.parametrize("copies", [1, 3])
def test_each_named_schedule_has_the_equilibrium_its_table_states(name, copies):
    s = schedules.parse(name)
    nb, ns = copies * len(s.values), copies * len(s.costs)
    eq = competitive_equilibrium(s.of(True, nb), s.of(False, ns))
    price, quantity = EQUILIBRIA[name]
    assert (eq.price_lo, eq.price_hi, eq.quantity) == (price, price, copies * quantity)


def test_a_market_on_a_schedule_holds_it_in_turn_and_its_grid_spans_it():
    m = MarketModel(schedule="3,2.5;1,1.5,2", n_buyers=4, n_sellers=6, prices=5, seed=1)
    np.testing.assert_array_equal(m.buyers.reservation, [3, 2.5, 3, 2.5])
    np.testing.assert_array_equal(m.sellers.reservation, [1, 1.5, 2, 1, 1.5, 2])
    assert (m.market.grid.lo, m.market.grid.hi) == (1.0, 3.0)
    for _ in range(25):  # kept every period: nothing is drawn
        m.step()
    np.testing.assert_array_equal(m.buyers.reservation, [3, 2.5, 3, 2.5])


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"schedule": "symmetric"}, "n_buyers must be a multiple of 11 (got 50)"),
    ({"schedule": "box"}, "schedule must be drawn, one of symmetric"),
    ({"schedule": "1,2"}, "V1,V2,...;C1,C2,..."),
    ({"schedule": "1,-2;1"}, "finite numbers in [0, 1e+12] (got -2)"),
    ({"schedule": "1,inf;1"}, "(got inf)"),
    ({"schedule": ";1"}, "at least one of its values"),
    ({"schedule": "1;" + ",".join(["1"] * 10_001)}, "at most 10,000 costs"),
    ({"schedule": "2;2", "n_buyers": 1, "n_sellers": 1}, "two different prices"),
    ({"schedule": "symmetric", "n_buyers": 11, "n_sellers": 11, "redraw": True},
     "redraw needs schedule drawn"),
])
def test_a_bad_schedule_is_refused_naming_it(kwargs, needle):
    with pytest.raises(ValueError, match=None) as err:
        MarketModel(**kwargs)
    assert needle in str(err.value)
