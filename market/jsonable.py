"""numpy values as JSON: the one ``default`` hook every JSON this project writes uses.

``json`` knows Python's numbers, not numpy's; a summary, a run part or a
``--json`` output holds numpy scalars (and, in summaries, arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def jsonable(obj: Any, fallback: Callable[[Any], Any] | None = None) -> Any:
    """``obj`` as a JSON value: numpy integers, floats and booleans as Python's, arrays as
    lists. Anything else goes to ``fallback`` (``str`` for printed summaries), or is a
    ``TypeError`` (files a program reads back must hold only what it wrote)."""
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if fallback is not None:
        return fallback(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
