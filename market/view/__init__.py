"""Views: the market and the two-agent game in the browser (Solara), and the terminal view.

The browser app (:mod:`~market.view.app`) serves Mesa's ``SolaraViz`` page
of the market and a two-agent page; its panels draw figures made by
:mod:`~market.view.figures`. :mod:`~market.view.terminal` is the document's
legacy curses view of one negotiation, rebuilt with rich.
"""
