"""Shared pieces of the command line: argument types and JSON output.

The checks of output paths live in :mod:`market.files`, beside the writes they guard.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from market.errors import UsageError
from market.jsonable import finite, jsonable
from market.parameters import Param

#: the name errors and ``--help`` go by: ``run.py``, or the installed console script's
#: (:func:`market.cli.console` sets it)
PROG = "run.py"


def console(**kw: Any) -> Any:
    """The rich console every command prints its results with.

    On a terminal, rich fits the terminal; piped or logged, rich would wrap
    at 80 columns and split lines the README shows whole, so there lines
    are never wrapped (``soft_wrap``) and tables get the width they need.
    """

    from rich.console import Console

    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(soft_wrap=piped, width=1000 if piped else None, **kw)


def int_in(name: str, lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """argparse ``type=`` for an integer in ``[lo, hi]``; the error names ``name``."""

    def parse(text: str) -> int:
        rng = _range_text(lo, hi)
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be an integer {rng} (got {text!r})"
            ) from None
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"{name} must be an integer {rng} (got {value})")
        return value

    return parse


def number_in(name: str, lo: float, hi: float | None, *, above: bool = False,
              below: bool = False, declared: Param | None = None) -> Callable[[str], float]:
    """argparse ``type=`` for a finite number in ``[lo, hi]`` (``(lo, ...`` with ``above``,
    ``..., hi)`` with ``below``; no upper bound when ``hi`` is None); the error names
    ``name``. ``declared``: the parameter's declaration, whose words and check it then
    takes (a resolution near its default, :class:`~market.parameters.Param`)."""
    words = (f"in {'(' if above else '['}{lo:g}, {hi:g}{')' if below else ']'}"
             if hi is not None else f"{'>' if above else '>='} {lo:g}")
    if declared is not None:
        words = declared.allowed().removeprefix("a number ")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low_ok = value > lo if above else value >= lo
        high_ok = hi is None or (value < hi if below else value <= hi)
        if declared is not None and math.isfinite(value):
            low_ok = high_ok = declared.contains(value)
        if not (math.isfinite(value) and low_ok and high_ok):
            raise argparse.ArgumentTypeError(f"{name} must be a number {words} (got {text!r})")
        return value

    return parse


def flag_dest(flag: str) -> str:
    """The attribute argparse gives a flag's value: ``--test-episodes`` -> ``test_episodes``."""
    return flag.removeprefix("--").replace("-", "_")


def _choice(flag: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    """argparse ``type=`` for one of ``choices``, in the words of every other check."""

    def parse(text: str) -> str:
        if text not in choices:
            raise argparse.ArgumentTypeError(
                f"{flag} must be one of {', '.join(choices)} (got {text!r})")
        return text

    return parse


def add_flags(p: argparse.ArgumentParser, params: Sequence[Param], *,
              defaults: bool = True) -> None:
    """One flag per declared parameter that has one (:mod:`market.parameters`): its type
    and range, help and (with ``defaults``; else None, for a preset to fill) default come
    from the declaration; a flag several parameters share is added once."""
    seen: set[str] = set()
    for d in params:
        if d.flag is None or d.flag in seen:
            continue
        seen.add(d.flag)
        names = (d.flag, *d.aliases)
        default = d.default if defaults else None
        shown = ("" if not defaults or d.default is None or "default" in d.help
                 else f" (default {d.default})")
        if d.kind == "flag" or d.switch is not None:
            p.add_argument(*names, action="store_true", help=d.help)
        elif d.kind == "int":
            lo, hi = int(d.lo), None if d.hi is None else int(d.hi)
            p.add_argument(*names, type=int_in(d.flag, lo, hi), default=default,
                           help=d.help + shown)
        elif d.kind == "float":
            p.add_argument(*names, type=number_in(d.flag, d.lo, d.hi, above=not d.closed,
                                                  below=d.below, declared=d),
                           default=default, metavar=d.metavar, help=d.help + shown)
        elif d.kind in ("choice", "dist"):
            p.add_argument(*names, type=_choice(d.flag, d.choices), default=default,
                           metavar=d.metavar or "|".join(d.choices), help=d.help)
        elif d.kind == "mix":
            p.add_argument(*names, default="averaging", metavar=d.metavar, help=d.help)
        elif d.kind in ("text", "file"):
            p.add_argument(*names, default=default, metavar=d.metavar, help=d.help)
        elif d.kind == "range":
            lo, hi = d.default
            p.add_argument(*names, default=f"{lo:g},{hi:g}", metavar=d.metavar, help=d.help)


def add_discounts(p: argparse.ArgumentParser) -> None:
    """The game's time costs, as every command that takes them spells them: factors in
    (0, 1] (1: no time cost; 0 would make every deal after the first offer worthless)."""
    from market.game.pressure import SELLER_DISCOUNT

    for flag, what in (("--discount", "both sides' discount factor per offer, in (0, 1] "
                                      "(default 1: time is free)"),
                       ("--seller-discount", "the Seller's factor (overrides --discount)"),
                       ("--buyer-discount", "the Buyer's factor (overrides --discount)")):
        p.add_argument(flag, type=number_in(flag, 0, 1, above=True, declared=SELLER_DISCOUNT),
                       default=None, metavar="D", help=what)


def discounts(args: argparse.Namespace) -> tuple[float, float] | None:
    """(Seller, Buyer) factors from :func:`add_discounts`' options; None if none was given
    (the game's own, or a file's, then stand)."""
    if (args.discount, args.seller_discount, args.buyer_discount) == (None, None, None):
        return None
    both = 1.0 if args.discount is None else args.discount
    return (both if args.seller_discount is None else args.seller_discount,
            both if args.buyer_discount is None else args.buyer_discount)


def add_pressure(p: argparse.ArgumentParser) -> None:
    """The game's time pressure, as every command that takes it spells it: the discounts
    (:func:`add_discounts`), then every other kind (:data:`~market.game.pressure.OTHERS`), with
    flags, ranges and help from their one declaration (:mod:`market.game.pressure`)."""
    from market.game.pressure import PRESSURE

    add_discounts(p)
    add_flags(p, [d for d in PRESSURE if d.flag], defaults=False)


def pressure(args: argparse.Namespace) -> dict[str, float]:
    """The time pressure given on the command line (:func:`add_pressure`), as
    :class:`~market.game.rules.Protocol` fields; those not given are left out (the game's
    own, or a file's, then stand)."""
    from market.game.pressure import PRESSURE

    given: dict[str, float] = {}
    if args.discount is not None:  # both sides; a side's own flag overrides it
        given.update(seller_discount=args.discount, buyer_discount=args.discount)
    for side in ("seller", "buyer"):
        own = getattr(args, f"{side}_discount")
        if own is not None:
            given[f"{side}_discount"] = own
    for d in PRESSURE:
        value = getattr(args, flag_dest(d.flag), None) if d.flag else None
        if value is not None:
            given[d.name] = value
    return given


def refuse_other_game(name: str, have: Any, asked: dict[str, float]) -> None:
    """Refuse time pressure on the command line that differs from the game a file's tables
    were trained in, naming both."""
    asked = dict(asked)
    if "seller_discount" in asked and "buyer_discount" in asked:  # both: said as a pair
        ds, db = asked.pop("seller_discount"), asked.pop("buyer_discount")
        if (have.seller_discount, have.buyer_discount) != (ds, db):
            raise UsageError(f"--discount: {name} holds tables trained with discount Seller "
                             f"{have.seller_discount:g}, Buyer {have.buyer_discount:g}, not "
                             f"Seller {ds:g}, Buyer {db:g}")
    for field, value in asked.items():  # one side's factor, the risk, the costs
        if getattr(have, field) != value:
            flag = "--" + field.replace("_", "-")
            raise UsageError(f"{flag}: {name} holds tables trained with {field} "
                             f"{getattr(have, field):g}, not {value:g}")


def path_text(name: str) -> Callable[[str], str]:
    """argparse ``type=`` for a file or folder name: not blank, no NUL character.

    An empty ``--out ""`` would otherwise mean the current folder, or no
    file at all, without a word; the error names ``name``.
    """

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{name} must name a file or folder (got {text!r})")
        if "\x00" in text:
            raise argparse.ArgumentTypeError(f"{name}: a path cannot hold a NUL character "
                                             f"(got {text!r})")
        return text

    return parse


def int_range(name: str, lo: int | None = None, hi: int | None = None
              ) -> Callable[[str], tuple[int, int]]:
    """argparse type for ``LO,HI``: two whole numbers with ``lo <= LO <= HI <= hi`` (bounds
    left to the command when it knows them only later, as the tournament's P).

    Every command writes a range ``LO,HI`` (the market's ``--value-range``
    too); ``LO-HI``, the tournament's older form, is still accepted.
    """

    def parse(text: str) -> tuple[int, int]:
        a, sep, b = text.partition(",")
        if not sep:
            a, sep, b = text.partition("-")
        try:
            if not sep:
                raise ValueError
            pair = int(a), int(b)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be two whole numbers LO,HI (got {text!r})") from None
        if lo is not None and hi is not None and not lo <= pair[0] <= pair[1] <= hi:
            raise argparse.ArgumentTypeError(
                f"{name} must satisfy {lo} <= LO <= HI <= {hi} (got {text!r})")
        return pair

    return parse


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return ""


def figure(x: float) -> str:
    """A figure in a table: three significant digits below 100, whole with thousands
    separators from there (``45.2``, ``933``, ``1,100``; never an exponent a column mixes
    with plain numbers)."""
    return f"{x:,.3g}" if abs(x) < 100 else f"{x:,.0f}"


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (numpy scalars and arrays converted; NaN and
    infinities as ``null``, so the output is valid JSON whatever the command)."""

    json.dump(finite(data), sys.stdout, indent=2, default=lambda o: finite(jsonable(o, str)),
              sort_keys=False, allow_nan=False)
    sys.stdout.write("\n")


def only_sections(only: str | None, choices: Sequence[str]) -> list[str]:
    """The sections ``--only NAME[,NAME]`` names (all of ``choices`` by default).

    Shared by ``bench`` and ``report``: an empty list or an unknown name is one line
    naming the choices.
    """
    if only is None:
        return list(choices)
    names = [s.strip() for s in only.split(",") if s.strip()]
    if not names:
        raise UsageError(f"--only names no section (choose from: {', '.join(choices)})")
    for s in names:
        if s not in choices:
            raise UsageError(f"--only: unknown section {s!r} (choose from: {', '.join(choices)})")
    return names
