"""The stores: every population's arrays in two flat arrays, the form compiled code takes them in.

Every population's arrays live in two flat stores (floats, integers), one
slice each, and a layout table says where (:mod:`strategies.base`): numba
then takes a whole market as a handful of arrays, and compiled decisions
index the stores without making array views. A population's own attributes
become views of its slices (``Strategy.adopt``), so what the engine learns
the strategy knows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from strategies.base import LAYOUT_COLUMNS, PARAMS, PLAYED, TABLE, TABLES, WAIT, KernelState


@dataclass
class Store:
    """The flat stores of some populations: ``fstore`` floats, ``istore`` integers, their
    ``layout`` (one row per population) and each population's ``config`` switches."""

    fstore: np.ndarray
    istore: np.ndarray
    layout: np.ndarray
    config: np.ndarray

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """What compiled code takes: ``(fstore, istore, layout, config)``."""
        return self.fstore, self.istore, self.layout, self.config


def stores(states: Sequence[KernelState]) -> tuple[Store, list[KernelState]]:
    """The flat stores of these populations and each population's views into them."""
    places: list[tuple[int, int, str, str, tuple[int, ...]]] = []  # in the stores' order
    parts: dict[str, list[np.ndarray]] = {"f": [], "i": []}
    for g, st in enumerate(states):
        for at, name, kind in _FIELDS:
            arr = np.asarray(getattr(st, name), dtype=np.float64 if kind == "f" else np.int64)
            places.append((g, at, name, kind, arr.shape))
            parts[kind].append(arr.reshape(-1))
    flat = {"f": np.concatenate(parts["f"]) if parts["f"] else np.zeros(0),
            "i": np.concatenate(parts["i"]) if parts["i"] else np.zeros(0, dtype=np.int64)}
    rows = [[0] * LAYOUT_COLUMNS for _ in states]  # the layout, as Python numbers first
    views: list[dict[str, np.ndarray]] = [{} for _ in states]
    sizes = {"f": 0, "i": 0}
    for g, at, name, kind, shape in places:
        o, size = sizes[kind], math.prod(shape)
        rows[g][at:at + 1 + len(shape)] = (o, *shape)
        views[g][name] = flat[kind][o:o + size].reshape(shape)
        sizes[kind] += size
    layout = np.array(rows, dtype=np.int64).reshape(len(states), LAYOUT_COLUMNS)
    config = (np.stack([np.asarray(st.config, dtype=np.int64) for st in states]) if states
              else np.zeros((0, 8), dtype=np.int64))
    return (Store(flat["f"], flat["i"], layout, config),
            [KernelState(**v, config=st.config) for v, st in zip(views, states, strict=True)])


#: a population's arrays in the stores: (layout column, field, store: floats or integers)
_FIELDS = ((PARAMS, "params", "f"), (TABLES, "tables", "f"), (WAIT, "wait", "f"),
           (TABLE, "table", "i"), (PLAYED, "played", "i"))


__all__ = ["Store", "stores"]
