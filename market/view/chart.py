"""One Vega-Lite chart on a page, updated by its data.

Solara's chart widget (behind ``FigureAltair``) waits 100 ms after each
change and then embeds the chart anew; at a market step that is most of
what the browser spends. :class:`LiveVegaLite` is the same kind of widget
(a Vue template, ``chart.vue``, loading Vega from the installed
``solara-assets``, so no internet) that draws each change at the next frame
and, when only the data changed, hands the data to the chart's Vega view
instead of building a new one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipyvuetify as v
import solara
import traitlets


class LiveVegaLite(v.VuetifyTemplate):
    """A Vega-Lite specification (a dict, data inline) drawn by the browser."""

    template_file = str(Path(__file__).with_name("chart.vue"))
    spec = traitlets.Dict().tag(sync=True)


@solara.component
def Chart(spec: dict[str, Any]) -> None:
    """A chart drawn by the browser from a Vega-Lite dictionary (see
    :mod:`market.view.figures` for why not an Altair object)."""
    LiveVegaLite.element(spec=spec)
