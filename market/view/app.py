"""The Solara app: the market page and the two-agent page, under tabs named for what they show.

Started by ``python run.py viz`` (``solara run market.view.app``). The market page
is at ``/``, the two-agent game at ``/two-agent``. Solara's default layout
names its tabs after the route paths ("Home", "two-agent"); :func:`Layout`
puts tabs with the routes' labels under the app bar instead. Each browser
session gets its own model.
"""

from __future__ import annotations

import solara
import solara.lab

from market.view import server
from market.view.components import MarketPage
from market.view.two_agent import TwoAgentPage

# the server imports this module at start, before it answers any request
server.harden()


@solara.component
def Layout(children: list | None = None) -> solara.Element:
    """Solara's app layout with one tab per route, labelled ``Market`` and ``Two agents``."""
    route, all_routes = solara.use_route()
    router = solara.use_router()
    index = all_routes.index(route) if route in all_routes else 0
    paths = [solara.resolve_path(r, level=0) for r in all_routes]

    def go(i: int) -> None:
        router.push(paths[i])

    with (solara.AppLayout(children=list(children or [])) as main, solara.AppBar(),
          solara.lab.Tabs(value=index, on_value=go, align="center")):
        for r in all_routes:
            solara.lab.Tab(r.label)
    return main


#: the root route's layout is every page's layout (Solara takes it from the ``/`` route)
routes = [
    solara.Route(path="/", component=MarketPage, label="Market", layout=Layout),
    solara.Route(path="two-agent", component=TwoAgentPage, label="Two agents"),
]
