"""Browser view: a market step with every panel rendered, against the bare model step.

What a user waits for after pressing Step is the model's step plus the
server's rendering of the page: every panel's chart specification is
built, Solara reconciles the page and updates the widgets, and the browser
draws what changed. This section renders the real market page in-process
(Solara's test renderer: the same components, no browser, no network) and
presses Mesa's Step button, so the figure covers everything but the
browser's drawing and the websocket; the reference timed in the same run is
the bare model step of the same market (:class:`~market.view.components.ViewMarket`).

Two rows drive the real page in headless Chromium
(:mod:`market.bench.browser`): a clicked step end to end (the click, the
websocket, the server, every chart redrawn and painted) and five seconds of
play at the default 100 ms interval. Two more rows say why the panels are
Vega-Lite dictionaries drawn by the browser: the deals chart redrawn through
Mesa's own Altair plot component
(``make_plot_component(..., backend="altair")``) and through this view's
dictionary, each alone on a page, step by step.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

from market.bench import BenchRow, at_most, spread

TITLE = "browser view: a market step with every panel rendered"
#: (traders per side, target ms per step)
SIZES = ((50, 200.0), (500, 500.0))
STEPS = 10  # clicks per repeat
WARMUP = 3


def _quiet() -> contextlib.AbstractContextManager[Any]:
    """Solara's test renderer prints app-bar elements it cannot mount; the bench stays quiet."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    return stack


def page(n: int, **settings: Any) -> tuple[Any, Callable[[], None]]:
    """The market page with ``n`` Sellers and ``n`` Buyers (and other ``settings``), rendered,
    and its Step button."""
    import ipyvuetify as v
    import solara

    from market.view.components import MarketPage

    @solara.component
    def App() -> None:
        with solara.AppLayout():
            MarketPage({"n_sellers": n, "n_buyers": n, **settings})

    with _quiet():
        _, rc = solara.render(App(), handle_error=False)
    button = rc.find(v.Btn, children=["Step"]).widget
    return rc, button.click


def _per_step(fn: Callable[[], None], steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) / steps


def rendered_step_times(n: int, repeats: int, steps: int = STEPS, **settings: Any
                        ) -> list[float]:
    """Seconds per Step click (model step + every panel rendered), one figure per repeat."""
    rc, click = page(n, **settings)
    with _quiet():
        for _ in range(WARMUP):
            click()
        out = [_per_step(click, steps) for _ in range(repeats)]
    rc.close()
    return out


def bare_step_times(n: int, repeats: int, steps: int = STEPS) -> list[float]:
    """Seconds per step of the same market, nothing rendered (the reference)."""
    from market.view.components import ViewMarket
    from market.view.settings import default_settings, model_kwargs

    model = ViewMarket(**model_kwargs({**default_settings(), "n_sellers": n, "n_buyers": n}))
    for _ in range(WARMUP):
        model.step()
    return [_per_step(model.step, steps) for _ in range(repeats)]


def deals_redraw_times(repeats: int, steps: int = STEPS) -> dict[str, list[float]]:
    """Seconds per step of a page holding only the deals chart: Mesa's Altair component
    against this view's Vega-Lite dictionary (same model, same measures)."""
    import solara
    from mesa.visualization import make_plot_component
    from mesa.visualization.utils import force_update, update_counter

    from market.view import figures as vf
    from market.view.chart import Chart
    from market.view.components import default_model

    mesa_plot, _ = make_plot_component(vf.DEALS_MEASURES, backend="altair")

    @solara.component
    def Ours(model: Any) -> None:
        update_counter.get()
        Chart(vf.deals_chart(model.datacollector.get_model_vars_dataframe()))

    out = {}
    for name, component in (("mesa", mesa_plot), ("ours", Ours)):
        model = default_model()

        def step(model: Any = model) -> None:
            model.step()
            force_update()

        with _quiet():
            _, rc = solara.render(component(model), handle_error=False)
            for _ in range(WARMUP):
                step()
            out[name] = [_per_step(step, steps) for _ in range(repeats)]
        rc.close()
    return out


#: targets in the browser: ms a clicked step, end to end; how far play may be from its interval
CLICK_TARGET_MS = 100.0
PLAY_MS = 100
PLAY_OFF_PERCENT = 20.0


def browser_rows(repeats: int, reference: float) -> list[BenchRow]:
    """The default page (50 + 50) in Chromium: clicked steps and play (``reference``: the
    in-process step with every panel rendered, ms, timed in this run)."""
    from market.bench import browser

    why = browser.missing()
    what_click = "clicked step in Chromium, 50 + 50 traders, end to end"
    what_play = f"play at {PLAY_MS} ms in Chromium: off its pace by"
    if why:
        nan = float("nan")
        return [BenchRow("view", what_click, nan, "ms", note=f"not measured: {why}",
                         target=at_most(CLICK_TARGET_MS, f"<= {CLICK_TARGET_MS:.0f} ms")),
                BenchRow("view", what_play, nan, "%", note=f"not measured: {why}",
                         target=at_most(PLAY_OFF_PERCENT, f"<= {PLAY_OFF_PERCENT:.0f}%"))]
    got = browser.measure(repeats)
    clicks, rates = got["clicks"], got["play"]
    c, r = statistics.median(clicks), statistics.median(rates)
    off = [abs(x * PLAY_MS / 1000 - 1) * 100 for x in rates]
    return [
        BenchRow("view", what_click, c, "ms", spread=spread(clicks),
                 target=at_most(CLICK_TARGET_MS, f"<= {CLICK_TARGET_MS:.0f} ms"),
                 note=f"{len(clicks)} clicks: click to count shown, charts drawn, painted; "
                      f"{c / max(reference, 1e-9):.1f}x the in-process step"),
        BenchRow("view", what_play, statistics.median(off), "%", spread=spread(off),
                 target=at_most(PLAY_OFF_PERCENT, f"<= {PLAY_OFF_PERCENT:.0f}%"),
                 note=f"{r:.2f} steps/s against {1000 / PLAY_MS:.0f} ({len(rates)} x "
                      f"{browser.PLAY_SECONDS:.0f} s)"),
    ]


def run(repeats: int, quick: bool) -> list[BenchRow]:
    with _quiet():  # Solara's hook linter warns about Mesa's own SolaraViz at import
        import market.view.components  # noqa: F401
    sizes = SIZES[:1] if quick else SIZES
    steps = 3 if quick else STEPS
    rows = []
    for n, target in sizes:
        bare = [t * 1e3 for t in bare_step_times(n, repeats, steps)]
        full = [t * 1e3 for t in rendered_step_times(n, repeats, steps)]
        b, f = statistics.median(bare), statistics.median(full)
        rows += [
            BenchRow("view", f"bare model step, {n} + {n} traders (reference)", b, "ms",
                     spread=spread(bare), note=f"{steps} steps a repeat, after {WARMUP}"),
            BenchRow("view", f"step with every panel rendered, {n} + {n} traders", f, "ms",
                     spread=spread(full), target=at_most(target, f"<= {target:.0f} ms"),
                     note=f"rendering {f - b:.0f} ms of it; {f / max(b, 1e-9):.1f}x the bare "
                          "step; Mesa's Step button on the real page, no browser"),
        ]
    n, target = sizes[0]  # the same page with strategy revision: the shares panel too
    evolving = [t * 1e3 for t in rendered_step_times(n, repeats, steps, revision="imitate",
                                                     revision_rate=0.2, period=2)]
    e = statistics.median(evolving)
    rows.append(BenchRow("view", f"step with every panel rendered and strategy revision, "
                         f"{n} + {n} traders", e, "ms", spread=spread(evolving),
                         target=at_most(target, f"<= {target:.0f} ms"),
                         note=f"the shares panel added; {e / max(rows[1].value, 1e-9):.2f}x the "
                              "page without revision"))
    if not quick:  # a server and a browser: about 20 s more (the browser test drives it too)
        rows += browser_rows(repeats, reference=rows[1].value)
    deals = deals_redraw_times(repeats, steps)
    mesa_ms = [t * 1e3 for t in deals["mesa"]]
    ours_ms = [t * 1e3 for t in deals["ours"]]
    m, o = statistics.median(mesa_ms), statistics.median(ours_ms)
    rows += [
        BenchRow("view", "deals chart redraw, Mesa's Altair plot component", m, "ms",
                 spread=spread(mesa_ms), note="step + redraw of a page holding only this chart"),
        BenchRow("view", "deals chart redraw, this view's Vega-Lite dictionary", o, "ms",
                 spread=spread(ours_ms), note=f"{m / max(o, 1e-9):.1f}x faster than Mesa's"),
    ]
    return rows
