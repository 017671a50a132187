"""The Solara app: the market page (Mesa's SolaraViz) and the two-agent page.

Started by ``python run.py viz`` (``solara run market.view.app``). The market page
is at ``/``, the two-agent game at ``/two-agent``; Solara's app bar links the
two. Each browser session gets its own model.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # figures are rendered to PNG on the server, never shown in a window

import solara  # noqa: E402

from market.view.components import MarketPage  # noqa: E402
from market.view.two_agent import TwoAgentPage  # noqa: E402

routes = [
    solara.Route(path="/", component=MarketPage, label="Market"),
    solara.Route(path="two-agent", component=TwoAgentPage, label="Two agents"),
]
