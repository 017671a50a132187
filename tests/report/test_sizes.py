"""Which Q-table rows a learner can ever be in."""

from __future__ import annotations

from market.game.rules import Protocol
from market.report.sizes import usable_rows


def test_each_role_uses_the_rows_it_can_see():
    protocol = Protocol(2, 2)  # rows: s, 1.0, 2.0, 1.1, 2.1, d
    aware = usable_rows(protocol, 2)
    assert aware[0].tolist() == [True, True, True, False, False, False]  # first mover
    assert aware[1].tolist() == [False, True, True, True, True, False]  # second mover
    assert usable_rows(protocol, 1)[0].tolist() == [True] * 5 + [False]
