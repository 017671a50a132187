"""Strategy specs: the one parser of what a user types to name a strategy.

A spec is ``NAME`` or ``NAME:ARG``: a registered name, optionally with an
argument that the strategy class says it takes (``qlearning:tables.npz``
plays a saved Q-table). A user's strategy that lives outside the package is
named where it lives, ``path/to/rules.py:Class`` or ``package.module:Class``:
the class is loaded and registered under its own name, and the spec keeps
the text, so processes that run it elsewhere (a batch's workers) load it too.

Every command, the market's mixes, the batch grid, the tournament and the
view parse specs here, so a spec means the same everywhere and a bad one is
refused with the same words.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from market.errors import UsageError
from market.game.rules import Protocol
from strategies import registry
from strategies.base import Strategy


@dataclass(frozen=True)
class Spec:
    """A parsed spec: the registered ``name`` and the text after ``:`` (None without one);
    ``source``: the ``where:Class`` text of a user's strategy loaded from outside the
    package (None for the package's)."""

    name: str
    arg: str | None = None
    source: str | None = None

    @property
    def cls(self) -> type[Strategy]:
        return registry.get(self.name)

    def __str__(self) -> str:
        if self.source is not None:
            return self.source
        return self.name if self.arg is None else f"{self.name}:{self.arg}"

    @property
    def label(self) -> str:
        """What a person reads in tables and figures: a user's strategy by its ``name``
        (not the path of its file), the others as written."""
        return self.name if self.source is not None else str(self)


def label(text: str) -> str:
    """:attr:`Spec.label` of a spec's text (the text itself if it names nothing known)."""
    try:
        return parse(text).label
    except ValueError:
        return text


def _outside(name: str) -> bool:
    """Whether the text before ``:`` names a file or module rather than a strategy."""
    return name.endswith(".py") or "/" in name or "\\" in name or "." in name


def _where(option: str | None) -> str:
    return f"{option}: " if option else ""


def _names_a_file(name: str, colon: str) -> bool:
    """Whether ``NAME:REST`` is ``WHERE:Class``, a user's strategy, not a registered one."""
    return bool(colon) and name not in registry.STRATEGIES and _outside(name)


def parse(text: str | Spec, option: str | None = None) -> Spec:
    """Check ``text`` and split it; :class:`UsageError` (prefixed by ``option``) if it is bad."""
    if isinstance(text, Spec):
        return text
    text = str(text).strip()
    name, colon, arg = text.partition(":")
    try:
        cls = strategy_class(text)
    except UsageError as exc:
        raise UsageError(f"{_where(option)}{exc}") from None
    if _names_a_file(name, colon):
        _check(cls, None, option)
        return Spec(cls.name, None, text)
    if not colon:
        _check(cls, None, option)
        return Spec(name)
    if not cls.argument:
        takers = [n for n in registry.names() if registry.get(n).argument]
        hint = ", ".join(f"{n}:{registry.get(n).argument}" for n in takers)
        raise UsageError(f"{_where(option)}strategy {name!r} takes nothing after ':' "
                         f"(only {hint or 'none'})")
    if not arg.strip():
        raise UsageError(f"{_where(option)}{name}: give {cls.argument} after ':' (got {text!r})")
    _check(cls, arg.strip(), option)
    return Spec(name, arg.strip())


def _check(cls: type[Strategy], arg: str | None, option: str | None) -> None:
    """The class's own check of ``NAME[:ARG]``, worded as every other bad spec."""
    try:
        cls.check_spec(arg)
    except ValueError as exc:
        raise UsageError(f"{_where(option)}{exc}") from None


def check_for_game(
    spec: str | Spec, protocol: Protocol, side: int | str, option: str | None = None
) -> None:
    """Refuse, before any work, a spec whose argument cannot play ``side`` of ``protocol``.

    What :func:`build` would find, without building: a saved Q-table is read
    and checked (a damaged file, a mixed layout, another game's P and T), a
    class of another library must be able to play this many levels. The
    message names the file or class, prefixed by ``option``. A check that
    passed is remembered for the same file (unchanged) and game, so checking
    every point of a batch grid reads each file once.
    """
    spec = parse(spec, option)
    if spec.arg is None:
        return
    try:
        stat = os.stat(spec.arg)
        stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError):
        stamp = None
    try:
        _checked(spec, protocol, side, stamp)
    except ValueError as exc:
        raise UsageError(f"{_where(option)}{exc}") from None


@functools.lru_cache(maxsize=256)
def _checked(spec: Spec, protocol: Protocol, side: int | str, stamp: object) -> None:
    spec.cls.spec_params(spec.arg, side, protocol)


def build(
    spec: str | Spec,
    side: int | str,
    protocol: Protocol,
    n_members: int = 1,
    *,
    option: str | None = None,
    **params: Any,
) -> Strategy:
    """The strategy a spec names, for ``side`` of ``protocol``, ready to play.

    With an argument, the class turns it into parameters (a saved Q-table is
    loaded without pickle, checked against ``protocol`` and played as saved).
    """
    spec = parse(spec, option)
    if spec.arg is not None:
        try:
            params.update(spec.cls.spec_params(spec.arg, side, protocol))
        except ValueError as exc:
            raise UsageError(f"{_where(option)}{exc}") from None
    return registry.make(spec.name, side, n_members, protocol, **params)


def fixed_game(specs: Mapping[str, str | Spec]) -> tuple[Protocol, list[str]] | None:
    """The game (P and T) that the specs' arguments fix, and which sides fix it.

    ``specs`` maps a side (or option) to its spec. None when no argument
    fixes the game; :class:`UsageError` when two disagree.
    """
    found: dict[str, Protocol] = {}
    for key, text in specs.items():
        spec = parse(text, key)
        if spec.arg is not None:
            try:
                game = spec.cls.spec_game(spec.arg)
            except ValueError as exc:
                raise UsageError(f"{_where(key)}{exc}") from None
            if game is not None:
                found[key] = game
    if not found:
        return None
    if len(set(found.values())) > 1:
        fields = [f.name for f in dataclasses.fields(Protocol)]
        differ = [n for n in fields if len({getattr(g, n) for g in found.values()}) > 1]
        shown = ["prices", "rounds", *(n for n in differ if n not in ("prices", "rounds"))]
        label = {"prices": "P", "rounds": "T"}
        raise UsageError(
            "the two Q-table files are for different games ("
            + "; ".join(f"{k}: " + ", ".join(f"{label.get(n, n)}={getattr(g, n):g}"
                                              for n in shown)
                        for k, g in found.items()) + ")"
        )
    return next(iter(found.values())), sorted(found)


def strategy_class(text: str | Spec) -> type[Strategy]:
    """The class ``text`` names, its argument left unchecked (:func:`parse` checks it, which
    for ``negmas`` and ``genius`` loads their libraries and plays a trial negotiation)."""
    if isinstance(text, Spec):
        return text.cls
    name, colon, _ = str(text).strip().partition(":")
    if _names_a_file(name, colon):  # a class name holds no ':'; a folder's name may
        where, _, attr = str(text).strip().rpartition(":")
        return registry.load(where, attr.strip())
    return registry.get(name)


def why_not_in_book(text: str | Spec) -> str | None:
    """Why the strategy ``text`` names cannot quote in a double auction or a call market
    (None if it can): there a trader acts on a book, not in one negotiation, through its
    compiled decision (``market.sim.auction``); a strategy that decides in Python has none
    the book's loop can call. Read from the class alone, so a refusal costs no library
    load."""
    from strategies import compiled

    if compiled.form(strategy_class(text)) is None:
        return "it decides in Python, not through a compiled decision"
    return None


def book_strategies() -> list[str]:
    """The registered strategies that can quote in a double auction or a call market (every
    one with a compiled decision), read from their classes (:func:`why_not_in_book`)."""
    return sorted(name for name in registry.STRATEGIES if why_not_in_book(name) is None)
