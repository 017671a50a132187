"""One Vega-Lite chart on a page: Solara's chart widget, given a specification dictionary."""

from __future__ import annotations

from typing import Any

import solara
import solara.widgets


@solara.component
def Chart(spec: dict[str, Any]) -> None:
    """A chart drawn by the browser: the widget behind Solara's ``FigureAltair``, fed a
    Vega-Lite dictionary (see :mod:`market.view.figures` for why not an Altair object)."""
    solara.widgets.VegaLite.element(spec=spec, listen_to_click=False, listen_to_hover=False)
