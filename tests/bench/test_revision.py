"""The revision bench measures what it says: time spent revising against time stepping."""

from __future__ import annotations

from market.bench.revision import revision_share


def test_revision_time_is_counted_apart_from_stepping():
    revising, stepping = revision_share(400, periods=2)
    assert 0 < revising < stepping
