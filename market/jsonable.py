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


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinity (Python's or numpy's, in any dict, list or tuple)
    as ``None``: JSON has no NaN, and a reader such as ``jq`` refuses it. A value that is
    not a number is left as it is."""
    import math

    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", None) == 0:  # a numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
