"""Partner choice in the browser: who is loyal to whom, and the Buyers' order parameter.

Two Vega-Lite charts of a market under ``--matching loyalty``
(:mod:`market.sim.matching`): the loyalty network (Buyers on the left,
Sellers on the right, an edge for each Seller a Buyer remembers, as wide and
dark as her preference ``J``; Buyers ordered by the Seller they prefer, so
loyal groups read as bundles), and the distribution of the Buyers' order
parameter ``y``. Above :data:`NETWORK_MAX` traders a drawing of every edge
is unreadable, so the network is summarised: how many Buyers prefer each
Seller most.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.sim.partners import LOYAL_Y, order_parameter
from market.view.figures import DARK, HEIGHT, WIDTH, Spec, n, q, records, top

#: the most traders whose network is drawn edge by edge
NETWORK_MAX = 300


def network_chart(ids: np.ndarray, weight: np.ndarray, n_sellers: int, period: int) -> Spec:
    """The loyalty network as the period opened (its preferences), or its summary above
    :data:`NETWORK_MAX` traders."""
    n_buyers = len(ids)
    if n_buyers + n_sellers > NETWORK_MAX:
        return _favourites_chart(ids, weight, n_sellers, period)
    known = (ids >= 0) & (weight > 0)
    favourite = np.where(known.any(axis=1), ids[np.arange(n_buyers), weight.argmax(axis=1)],
                         n_sellers)
    order = np.argsort(favourite, kind="stable")  # Buyers grouped by their favourite Seller
    place = np.empty(n_buyers)
    place[order] = np.arange(n_buyers)
    scale_b = 1.0 / max(n_buyers - 1, 1)
    scale_s = 1.0 / max(n_sellers - 1, 1)
    b, m = np.nonzero(known)
    j = weight[b, m]
    top_j = float(j.max()) if j.size else 1.0
    edges = records(x=np.zeros(b.size), y=place[b] * scale_b, x2=np.ones(b.size),
                    y2=ids[b, m] * scale_s, J=j, strength=j / top_j, buyer=b + 1,
                    seller=ids[b, m] + 1)
    nodes = records(x=[0.0] * n_buyers + [1.0] * n_sellers,
                    y=[*(place * scale_b), *(np.arange(n_sellers) * scale_s)],
                    side=["buyer"] * n_buyers + ["seller"] * n_sellers,
                    trader=[*(np.arange(n_buyers) + 1), *(np.arange(n_sellers) + 1)])
    axis = {"axis": None}
    layers = [
        {"data": {"values": edges}, "mark": {"type": "rule", "color": "#555"},
         "encoding": {"x": q("x", None, **axis), "y": q("y", None, **axis),
                      "x2": {"field": "x2"}, "y2": {"field": "y2"},
                      "strokeWidth": q("strength", None, legend=None,
                                       scale={"domain": [0, 1], "range": [0.2, 3]}),
                      "opacity": q("strength", None, legend=None,
                                   scale={"domain": [0, 1], "range": [0.08, 0.9]}),
                      "tooltip": [q("buyer"), q("seller"), q("J", format=".3f")]}},
        {"data": {"values": nodes}, "mark": {"type": "circle", "size": 40},
         "encoding": {"x": q("x", None, **axis), "y": q("y", None, **axis),
                      "color": {"field": "side", "type": "nominal",
                                "scale": {"domain": ["buyer", "seller"],
                                          "range": [DARK["buyer"], DARK["seller"]]},
                                "legend": {"orient": "top", "title": None}},
                      "tooltip": [n("side"), q("trader")]}},
    ]
    return top({"width": WIDTH, "height": HEIGHT, "layer": layers},
               f"Period {period + 1}: who prefers whom (Buyers left, Sellers right; "
               f"{b.size:,} remembered)")


def _favourites_chart(ids: np.ndarray, weight: np.ndarray, n_sellers: int,
                      period: int) -> Spec:
    """Buyers per Seller by their favourite (the summary of a large network)."""
    known = (ids >= 0) & (weight > 0)
    some = known.any(axis=1)
    fav = ids[np.arange(len(ids)), weight.argmax(axis=1)][some]
    counts = np.bincount(fav, minlength=n_sellers)
    hist = np.bincount(counts)
    rows = records(customers=np.arange(hist.size), sellers=hist)
    return top({"width": WIDTH, "height": HEIGHT, "data": {"values": rows},
                "mark": {"type": "bar", "color": DARK["seller"]},
                "encoding": {"x": {"field": "customers", "type": "ordinal",
                                   "title": "Buyers who prefer the Seller most"},
                             "y": q("sellers", "Sellers"),
                             "tooltip": [q("customers"), q("sellers")]}},
               f"Period {period + 1}: {int(some.sum()):,} of {len(ids):,} Buyers prefer a "
               f"Seller; their favourites")


def y_chart(weight: np.ndarray, n_sellers: int, period: int) -> Spec:
    """The distribution of the Buyers' order parameter ``y`` (1: loyal; ``1/n``: searching)."""
    y = order_parameter(weight, n_sellers)
    counts, edges = np.histogram(y, bins=20, range=(0.0, 1.0))
    rows = records(lo=edges[:-1], hi=edges[1:], buyers=counts,
                   loyal=["loyal" if e >= LOYAL_Y - 1e-9 else "searching" for e in edges[:-1]])
    mean: Any = float(y.mean()) if y.size else 0.0
    return top({"width": WIDTH, "height": HEIGHT, "data": {"values": rows},
                "mark": {"type": "bar"},
                "encoding": {"x": q("lo", "Buyer's order parameter y", bin={"binned": True},
                                    scale={"domain": [0, 1]}),
                             "x2": {"field": "hi"}, "y": q("buyers", "Buyers"),
                             "color": {"field": "loyal", "type": "nominal",
                                       "scale": {"domain": ["searching", "loyal"],
                                                 "range": ["#9ecae1", DARK["buyer"]]},
                                       "legend": {"orient": "top", "title": None}},
                             "tooltip": [q("lo", format=".2f"), q("buyers")]}},
               f"Period {period + 1}: Buyers' y (mean {mean:.3f}; loyal: y >= {LOYAL_Y:g})")
