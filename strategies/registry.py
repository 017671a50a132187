"""The registry: every strategy class under its name, found by looking, not by listing.

Each module of this package that defines a named :class:`~strategies.base.Strategy`
subclass contributes it on import, so adding a strategy is adding a module
(or a class to a module); the command line, the market, the tournament, the
batch runner and the view all see it at once. Names are what users type:
``"averaging"``, ``"qlearning"``, ``"tit-for-tat"``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import types
from pathlib import Path
from typing import Any

from market.errors import UsageError
from market.game.rules import Protocol
from strategies.base import Strategy

STRATEGIES: dict[str, type[Strategy]] = {}

#: modules of the package that hold machinery, not strategies
_MACHINERY = {"base", "compiled", "contract", "registry", "rule_based", "specs"}


def from_user(cls: type) -> bool:
    """Whether ``cls`` is a user's strategy (loaded from outside the package), not one of
    the package's own."""
    return not cls.__module__.startswith("strategies.")


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


def load(where: str, attr: str) -> type[Strategy]:
    """A user's strategy class from outside the package, registered under its ``name``.

    ``where`` is a file (``path/to/rules.py``) or an importable module
    (``my_package.rules``) and ``attr`` the class in it: what a spec
    ``rules.py:Midpoint`` or ``my_package.rules:Midpoint`` names. The module
    runs as any import does (it is the user's own code); the class must be a
    :class:`Strategy` with a ``name`` that no other class holds.
    """
    spec_text = f"{where}:{attr}"
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _module_of_file(where, spec_text)
    else:
        try:
            module = importlib.import_module(where)
        except (Exception, SystemExit) as exc:
            raise UsageError(f"strategy {spec_text!r}: cannot import module {where!r} "
                             f"({type(exc).__name__}: {exc})") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise UsageError(f"strategy {spec_text!r}: {where!r} has no Strategy class {attr!r}")
    _check_users(cls, attr, spec_text)
    return register(cls)


def _module_of_file(where: str, spec_text: str) -> types.ModuleType:
    """The module of a user's file, run once per content: an edit since this process ran it
    runs the new text, never the old."""
    try:
        path = Path(where).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop, a name too long
        raise UsageError(f"strategy {spec_text!r}: {where!r} cannot be resolved "
                         f"({exc.strerror if isinstance(exc, OSError) else exc})") from None
    if not path.is_file():
        raise UsageError(f"strategy {spec_text!r}: no file {where!r}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    module_name = f"user_strategy_{path.stem}_{digest}"
    try:
        content = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise UsageError(f"strategy {spec_text!r}: {where!r} cannot be read "
                         f"({exc.strerror or exc})") from None
    module = sys.modules.get(module_name)
    if module is not None and getattr(module, "__content__", None) == content:
        return module
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"strategy {spec_text!r}: {where!r} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    module.__content__ = content  # type: ignore[attr-defined]
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # sys.exit() at import: not the command's
        sys.modules.pop(module_name, None)
        raise UsageError(f"strategy {spec_text!r}: importing {where!r} failed "
                         f"({type(exc).__name__}: {exc})") from None
    return module


def _check_users(cls: type[Strategy], attr: str, spec_text: str) -> None:
    """A user's class may play: it has a name no other class holds, a rule if it is compiled,
    and keeps its contract's promises on sample turns."""
    if not cls.__dict__.get("name"):
        raise UsageError(f"strategy {spec_text!r}: class {attr} sets no name")
    from strategies import compiled  # the user's class is about to play: numba's load is due

    if (issubclass(cls, compiled.Compiled) and compiled.form(cls) is None
            and cls.act is compiled.Compiled.act):
        raise UsageError(f"strategy {spec_text!r}: class {attr} states no rule (a RuleBased "
                         "strategy needs its target(turn, rng); a Compiled one its "
                         "decide_rows, or an act of its own)")
    from strategies import contract

    contract.check_rule(cls)  # its promises, on sample turns, before it plays
    taken = STRATEGIES.get(cls.name)
    if taken is not None and taken is not cls and (
            taken.__module__, taken.__qualname__) != (cls.__module__, cls.__qualname__):
        raise UsageError(f"strategy {spec_text!r}: the name {cls.name!r} is taken by "
                         f"{taken.__module__}.{taken.__qualname__}")


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
