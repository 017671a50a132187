"""The revision bench measures what it says: time spent revising against time stepping."""

from __future__ import annotations

import itertools

from market.bench.revision import revision_share


def test_each_periods_revision_is_counted_as_revising_and_nothing_else_is():
    # A clock that moves one unit each time it is read: each revision reads it twice (one
    # unit), the run reads it once more at each end. Over 3 periods (one revision at each
    # period's end) revising must be exactly 3 units, and stepping the rest: the run's
    # 2 * 3 + 1 units less the revisions'.
    ticks = itertools.count()
    revising, stepping = revision_share(200, periods=3, clock=lambda: float(next(ticks)))
    assert (revising, stepping) == (3.0, 4.0)


def test_on_the_real_clock_both_shares_are_measured():
    revising, stepping = revision_share(200, periods=2)
    assert revising > 0 and stepping > 0
