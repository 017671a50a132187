"""What a declared parameter is: one record per parameter, and its check.

A parameter is declared once (:class:`Param`): its name, kind, default,
allowed range or choices, one-line help, command-line flag and view
control. The market's parameters (:mod:`market.sim.declared`) and the
trainer's (:class:`market.game.training.TrainConfig`) are declared so, and
every check, flag, help text and docs table is derived from the
declarations; :func:`check_value` is the one check of a single value.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: what a parameter is, and so how it is checked, typed and spelled
KINDS = ("int", "float", "flag", "choice", "dist", "range", "mix", "mapping", "text", "file")


@dataclass(frozen=True)
class Control:
    """The view's sidebar control of a parameter: its label and, for numbers, the part of
    the allowed range a slider offers."""

    label: str
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class Param:
    """One parameter.

    ``kind``: one of :data:`KINDS`; ``lo``/``hi``: the allowed range of an
    ``int`` (``hi`` a cap of :mod:`market.limits`; None: no upper bound) or
    a ``float`` (``(lo, hi]``, or ``[lo, hi]`` with ``closed``);
    ``choices``: a ``choice``'s (or ``dist``'s) values; ``optional``: None
    is allowed (and means what ``help`` says); ``below``: a ``float`` stays
    below ``hi`` (``[lo, hi)``); ``flag``: its command-line
    flag (None: none; several parameters may share one); ``switch``: a
    ``choice`` set by an on/off flag to this value; ``control``: its control
    in the browser view, if it has one; ``extension``: it extends the
    original project's game or market (a run records it only where that
    extension is used); ``family``: the parameter that switches the
    extension this one tunes (``revision`` for ``mutation``): it is in use when
    that one is off its default; ``resolution``: a ``float`` is its value of "none" (``off``,
    by default its default) or at least this far from it (a time pressure finer than the
    exact evaluator can tell from none).
    """

    name: str
    kind: str
    default: Any
    help: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False
    flag: str | None = None
    switch: str | None = None
    metavar: str | None = None
    control: Control | None = None
    aliases: tuple[str, ...] = ()
    closed: bool = False
    below: bool = False
    extension: bool = False
    family: str | None = None
    resolution: float | None = None
    off: float | None = None

    @property
    def none_value(self) -> Any:
        """The value that means "none of it" (:attr:`off`, else the default)."""
        return self.default if self.off is None else self.off

    def contains(self, v: float) -> bool:
        """Whether the number ``v`` lies in the declared range."""
        low = v >= self.lo if (self.closed or self.kind == "int") else v > self.lo
        high = self.hi is None or (v < self.hi if self.below else v <= self.hi)
        ref = self.none_value
        fine = (self.resolution is not None and v != ref  # as typed: 0.999999999 is 1e-9
                and abs(v - ref) < self.resolution * (1 - 1e-6))  # from 1
        return bool(low and high and not fine)

    def allowed(self) -> str:
        """The allowed values in words (messages and the docs table)."""
        none = " or none" if self.optional else ""
        if self.kind == "int":
            if self.hi is None:
                return f"an integer >= {self.lo:.0f}{none}"
            return f"an integer in [{self.lo:.0f}, {self.hi:.0f}]{none}"
        if self.kind == "float":
            left = "[" if self.closed else "("
            if self.hi is None:
                return f"a number {'>=' if self.closed else '>'} {self.lo:g}{none}"
            right = ")" if self.below else "]"
            fine = (f" ({self.none_value:g}, or at least {self.resolution:g} from it)"
                    if self.resolution is not None else "")
            return f"a number in {left}{self.lo:g}, {self.hi:g}{right}{fine}{none}"
        if self.kind == "flag":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "dist":
            return "one of " + ", ".join(self.choices) + ", or f(rng, n, lo, hi)"
        if self.kind == "range":
            return "two numbers lo < hi"
        if self.kind == "mix":
            return "strategy -> share, shares summing to 1"
        if self.kind == "text":
            return "one of " + ", ".join(self.choices) + f", or {self.metavar}"
        if self.kind == "file":
            return "a file's path (empty: none)"
        return "strategy -> keyword arguments"


def declare(kind: str, default: Any, help: str, **kw: Any) -> Any:
    """A dataclass field declared as a parameter (its name is the field's): the declaration
    is kept in the field's metadata (:func:`declarations`)."""
    return dataclasses.field(default=default,
                             metadata={"param": Param("", kind, default, help, **kw)})


def field_of(d: Param) -> Any:
    """A dataclass field for the parameter ``d`` declared elsewhere (named by the field it
    becomes): one declaration, carried by several records (the game's time pressure is the
    protocol's and the trainer's)."""
    return dataclasses.field(default=d.default,
                             metadata={"param": dataclasses.replace(d, name="")})


_TYPES = {"int": "int", "float": "float", "flag": "bool", "choice": "str", "text": "str",
          "file": "str"}


def carries(decls: tuple[Param, ...], *, after: str) -> Callable[[type], type]:
    """A class decorator, under ``@dataclass``: the class gets a field per declaration in
    ``decls`` (:func:`field_of`), in their order, right after its own field ``after``. So a
    record that carries parameters declared elsewhere (the game's time pressure, carried by
    the protocol, the trainer's config and the market's parameters) gains a new one from
    its declaration alone."""

    def add(cls: type) -> type:
        own = dict(cls.__dict__.get("__annotations__", {}))
        if after not in own:
            raise TypeError(f"{cls.__name__} has no field {after!r} to carry fields after")
        annotations: dict[str, Any] = {}
        for name, kind in own.items():
            annotations[name] = kind
            if name == after:
                annotations.update({d.name: _TYPES[d.kind] for d in decls})
        cls.__annotations__ = annotations
        for d in decls:
            setattr(cls, d.name, field_of(d))
        return cls

    return add


def declarations(cls: type) -> tuple[Param, ...]:
    """The declarations of a dataclass's fields made with :func:`declare`, named, in order."""
    return tuple(dataclasses.replace(f.metadata["param"], name=f.name)
                 for f in dataclasses.fields(cls) if "param" in f.metadata)


def check_value(d: Param, v: Any, name: str | None = None) -> Any:
    """A scalar value checked by its declaration and normalised; ``ValueError`` naming
    ``name`` (the parameter, or the caller's word for it) and what is allowed. Mixes,
    ranges and mappings are returned as given: the caller checks them (their words are the
    market's)."""
    name = name or d.name
    kind = d.kind
    if v is None and d.optional:
        return None
    allowed = d.allowed().removesuffix(" or none")
    if kind == "int":
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or not d.contains(v):
            raise ValueError(f"{name} must be {allowed} (got {v!r})")
        return int(v)
    if kind == "float":
        ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
        if not ok or not d.contains(float(v)):
            raise ValueError(f"{name} must be {allowed} (got {v!r})")
        return float(v)
    if kind == "flag":
        if type(v).__name__ not in ("bool", "bool_") and v not in (0, 1):
            raise ValueError(f"{name} must be true or false (got {v!r})")
        return bool(v)
    if kind == "choice" or (kind == "dist" and not callable(v)):
        if v not in d.choices:
            raise ValueError(f"{name} must be one of {', '.join(d.choices)} (got {v!r})")
        return v
    return v
