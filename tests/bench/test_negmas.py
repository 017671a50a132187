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
    rows = {r.metric: r for r in run(repeats=1, quick=True)}
    assert {r.section for r in rows.values()} == {"negmas"} and len(rows) == 7
    batched = rows["speed-up of our protocol over NegMAS, batched"]
    assert batched.unit == "x" and batched.target is not None and batched.value > 1
    assert rows["speed-up over NegMAS, one negotiation per call"].value > 1
    adapted = rows["NegMAS SAOMechanism, our boulware vs conceder (adapter)"]
    assert "same deals as our protocol: yes" in adapted.note
