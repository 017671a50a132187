"""The price grid: levels <-> money, and reservation prices -> acceptable levels."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from market.game.grid import PriceGrid


class TestPriceGrid:
    def test_whole_units_maps_level_k_to_price_lo_plus_k_minus_1(self):
        g = PriceGrid.whole_units(0, 100)
        assert g.prices == 101
        assert g.price(1) == 0.0 and g.price(33) == 32.0 and g.price(101) == 100.0

    def test_no_deal_level_is_nan(self):
        assert np.isnan(PriceGrid(0, 1, 5).price(0))
        assert np.isnan(PriceGrid(0, 1, 5).price(np.array([0, 1]))[0])

    def test_reservation_levels_on_a_five_level_grid(self):
        g = PriceGrid(0.0, 100.0, 5)  # levels at 0, 25, 50, 75, 100
        assert g.level_at_least(30.0) == 3  # a Seller with cost 30 accepts 50 and up
        assert g.level_at_least(25.0) == 2  # exactly on a level: that level
        assert g.level_at_most(74.9) == 3  # a Buyer with value 74.9 pays at most 50
        assert g.level_at_most(75.0) == 4
        assert g.level_at_least(101.0) == 6  # above the grid: no acceptable level (P + 1)
        assert g.level_at_most(-1.0) == 0  # below the grid: none (0)

    @pytest.mark.parametrize("lo,hi,p", [(0, 0, 5), (5, 1, 5), (0, 1, 1)])
    def test_bad_grids_are_refused(self, lo, hi, p):
        with pytest.raises(ValueError):
            PriceGrid(lo, hi, p)

    @given(st.floats(-50, 150), st.integers(2, 40))
    def test_levels_bracket_the_reservation_price(self, price, prices):
        g = PriceGrid(0.0, 100.0, prices)
        up, down = int(g.level_at_least(price)), int(g.level_at_most(price))
        if 1 <= up <= prices:
            assert g.price(up) >= price - 1e-6
            assert up == 1 or g.price(up - 1) < price
        if 1 <= down <= prices:
            assert g.price(down) <= price + 1e-6
            assert down == prices or g.price(down + 1) > price


def test_a_cost_a_hair_above_a_level_is_not_rounded_down_to_it():
    g = PriceGrid(0.0, 100.0, 5)
    assert g.level_at_least(50.0 + 1e-8) == 4  # 50 would lose the Seller 1e-8
    assert g.level_at_most(50.0 - 1e-8) == 2  # 50 would cost the Buyer 1e-8 too much
    for k in range(1, 6):  # exact grid prices still map to their own level
        assert g.level_at_least(g.price(k)) == k and g.level_at_most(g.price(k)) == k


@given(st.floats(0, 100), st.integers(2, 200))
def test_reservation_levels_never_cross_the_reservation_price(price, prices):
    g = PriceGrid(0.0, 100.0, prices)
    up, down = int(g.level_at_least(price)), int(g.level_at_most(price))
    if up <= prices:
        assert g.price(up) >= price
    if down >= 1:
        assert g.price(down) <= price
