"""The view bench times what it says: Mesa's Step button on the real page, every panel drawn."""

from __future__ import annotations

import solara.widgets

from market.bench import view
from market.view.chart import LiveVegaLite


def _charts(rc):
    return [w.spec for w in rc.find(LiveVegaLite).widgets]


def test_the_bench_presses_step_on_the_real_page_and_every_chart_redraws():
    rc, click = view.page(10)
    try:
        before = _charts(rc)
        for _ in range(3):
            click()
        after = _charts(rc)
        summary = "".join(w.unsafe_innerHTML or "" for w in rc.find(solara.widgets.HTML).widgets)
        assert "<b>Step 3</b>" in summary and "10 sellers, 10 buyers" in summary
        assert len(before) == len(after) == 6
        assert all(a != b for a, b in zip(before, after, strict=True))
    finally:
        rc.close()


def test_timings_are_per_step_and_positive():
    assert all(t > 0 for t in view.bare_step_times(10, repeats=2, steps=2))
    assert len(view.rendered_step_times(10, repeats=2, steps=1)) == 2
    deals = view.deals_redraw_times(repeats=1, steps=1)
    assert set(deals) == {"mesa", "ours"} and all(v[0] > 0 for v in deals.values())
