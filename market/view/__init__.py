"""Views: the market and the two-agent game in the browser (Solara), and the terminal view.

The browser app (:mod:`~market.view.app`) serves the market page
(:mod:`~market.view.components`, built from Mesa's ``SolaraViz`` parts: its
model controller, step counter and render interval) and the two-agent page
(:mod:`~market.view.two_agent`). Panels are Vega-Lite charts made by
:mod:`~market.view.figures` and drawn by the browser; the sidebar's settings
are :mod:`~market.view.settings` (checked by the market's own validation)
shown by :mod:`~market.view.controls`. :mod:`~market.view.terminal` is the
document's legacy curses view of one negotiation, rebuilt with rich.
"""
