"""The NegMAS bench times real negotiations of the pair it names, with the outcomes it reports."""

from __future__ import annotations

import pytest

pytest.importorskip("negmas")

from market.bench.negmas import _negmas, _ours, run  # noqa: E402


def test_the_timed_negotiations_are_the_pair_and_end_as_reported():
    secs, ours = _ours(4)
    assert secs >= 0 and len(ours) == 4 and (ours > 0).all()
    _, adapted = _negmas(2, adapted=True)  # our two strategies inside NegMAS's mechanism
    assert adapted == [int(x) for x in ours[:2]]
    _, native = _negmas(2, adapted=False)  # NegMAS's own Boulware and Conceder
    assert all(level > 0 for level in native)


def test_quick_section_rows():
    rows = run(repeats=1, quick=True)
    assert [r.section for r in rows] == ["negmas"] * 4
    assert rows[-1].unit == "x" and rows[-1].target is not None and rows[-1].value > 1
    assert "same deals as our protocol: yes" in rows[2].note
