"""Bargaining strategies and the registry that names them.

Each strategy is a small class (see :mod:`strategies.base`) with a ``name``
and a ``classifier``; the registry maps names to classes so the command
line, the market, the batch runner and the view can all say
``"averaging"`` or ``"qlearning"``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

from market.protocol import Protocol
from strategies.base import Strategy

STRATEGIES: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Add a strategy class to the registry under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


def _discover() -> None:
    """Register every named :class:`Strategy` defined in this package's modules."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Strategy) and obj.name and obj.__module__ == module.__name__:
                register(obj)


_discover()


def names() -> list[str]:
    return sorted(STRATEGIES)


def get(name: str) -> type[Strategy]:
    """The class registered as ``name``; ``ValueError`` naming the choices otherwise."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r} (choose from: {', '.join(names())})"
        ) from None


def make(
    name: str,
    side: int | str,
    n_members: int = 1,
    protocol: Protocol | None = None,
    **params: Any,
) -> Strategy:
    """Build the strategy ``name`` for ``side`` with ``n_members`` members.

    Strategies that need the game's sizes (tables, schedules) get
    ``protocol``; the others ignore it.
    """
    cls = get(name)
    if cls.needs_protocol:
        params["protocol"] = protocol or Protocol()
    return cls(side, n_members, **params)


__all__ = ["STRATEGIES", "Strategy", "get", "make", "names", "register"]
