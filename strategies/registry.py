"""The registry: every strategy class under its name, found by looking, not by listing.

Each module of this package that defines a named :class:`~strategies.base.Strategy`
subclass contributes it on import, so adding a strategy is adding a module
(or a class to a module); the command line, the market, the tournament, the
batch runner and the view all see it at once. Names are what users type:
``"averaging"``, ``"qlearning"``, ``"tit-for-tat"``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

from market.errors import UsageError
from market.game.rules import Protocol
from strategies.base import Strategy

STRATEGIES: dict[str, type[Strategy]] = {}

#: modules of the package that hold machinery, not strategies
_MACHINERY = {"base", "compiled", "registry", "rule_based", "specs"}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Add a strategy class to the registry under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


def discover() -> None:
    """Register every :class:`Strategy` that names itself in a strategy module of the package."""
    package = importlib.import_module("strategies")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _MACHINERY:
            continue
        module = importlib.import_module(f"strategies.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # a class is registered under the name its own body gives: a variant that
            # inherits its parent's name (the market's Q-learner) is not a second entry
            if (issubclass(obj, Strategy) and obj.__dict__.get("name")
                    and obj.__module__ == module.__name__):
                register(obj)


def names() -> list[str]:
    """Every registered name, sorted."""
    return sorted(STRATEGIES)


def get(name: str) -> type[Strategy]:
    """The class registered as ``name``; a :class:`UsageError` naming the choices otherwise.

    The one place that words "unknown strategy".
    """
    try:
        return STRATEGIES[name]
    except KeyError:
        raise UsageError(
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
