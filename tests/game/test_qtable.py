"""The Q-table layout's rule for cells that carry nothing learned."""

from __future__ import annotations

import numpy as np

from market.game import qtable
from market.game.rules import Protocol


def test_untrained_cells_are_the_illegal_ones_and_those_still_at_their_start():
    p = Protocol(3, 2)
    legal = qtable.legal_rows(p)
    table = np.where(legal, 0.5, 0.0)
    table[0, 0] = 0.0  # legal, never updated
    blank = qtable.untrained(table, p)
    assert blank[0, 0] and not blank[0, 1]
    np.testing.assert_array_equal(blank[1:], ~legal[1:])
    assert blank[qtable.terminal_row(p)].all()  # d: no action at all
    # another initial value (optimistic start): cells still at it are the untrained ones
    np.testing.assert_array_equal(qtable.untrained(table, p, init=0.5), ~legal | (table == 0.5))
    # a stack of tables (roles, members) gives a stack of masks
    assert qtable.untrained(np.stack([table, table]), p).shape == (2, *table.shape)
