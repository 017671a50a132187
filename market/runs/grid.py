"""The batch's grid: parameter name -> list of values, from ``--param`` or a TOML file.

A grid is validated against :class:`~market.sim.model.MarketModel`'s
parameters (names and types from :func:`market.sim.signature.model_parameters`,
itself made from the declarations of :mod:`market.sim.declared`; every grid
point's values by :func:`market.sim.params.check`, the model's and the
market command's own check, before any run starts) and expanded point by
point into the model's keyword arguments.

Population mixes: ``buyer_mix.<strategy>=share`` (likewise ``seller_mix``;
``<strategy>`` may be ``qlearning:FILE.npz``) gives that strategy a share of
its side; whatever the named shares leave (``1 - sum``) goes to the fill
strategy (``averaging`` by default), added to its own share if it is named
too. Shares must lie in ``[0, 1]`` and sum to at
most 1 at every grid point. A side with no ``*_mix.*`` key keeps the
model's default mix.
"""

from __future__ import annotations

import itertools
import math
import os
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from market.errors import UsageError
from market.files import (
    read_regular,
    shown,
)
from market.limits import GRID_POINTS_MAX
from market.sim import params as market_params
from market.sim.declared import BY_NAME, ENGINES
from market.sim.signature import model_parameters

#: fills each side's share left by the named strategies
DEFAULT_FILL = "averaging"
MIX_KEYS = ("buyer_mix", "seller_mix")
#: parameters the batch sets itself, never through the grid
RESERVED = ("seed", "rng")
#: model arguments the batch sets unless the grid does: agent tables are not kept by a batch
BATCH_DEFAULTS = {"agent_data": "none"}


# --- the model's parameters ------------------------------------------------------------------
def model_class() -> type:
    """The market model class (imported late: Mesa is heavy and the model may be swapped)."""
    from market.sim.model import MarketModel

    return MarketModel


# --- grids -----------------------------------------------------------------------------------
def parse_scalar(text: str) -> Any:
    """A command-line value: integer, then float, then true/false, else the text itself."""
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    return t


def parse_param_options(options: Iterable[str]) -> dict[str, list[Any]]:
    """``["n_buyers=50,100", "rounds=3"]`` -> ``{"n_buyers": [50, 100], "rounds": [3]}``."""
    grid: dict[str, list[Any]] = {}
    for opt in options:
        key, sep, values = opt.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise UsageError(f"--param must be NAME=V1,V2,... (got {opt!r})")
        if key in grid:
            raise UsageError(f"--param {key} given twice")
        grid[key] = [parse_scalar(v) for v in values.split(",")]
    return grid


#: bytes of a TOML grid file (a grid of the largest allowed size is far smaller)
GRID_FILE_MAX = 16 * 2**20


def load_grid_toml(path: str | os.PathLike[str]) -> dict[str, list[Any]]:
    """A TOML grid: ``name = [values]`` (or one value); tables flatten to dotted names.

    ``[buyer_mix]`` with ``qlearning = [0, 0.5]`` is ``buyer_mix.qlearning``.
    """

    p = Path(path)
    try:  # a regular file only: a FIFO or a device would never end
        data = tomllib.loads(read_regular(p, GRID_FILE_MAX, "TOML grid file").decode())
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError | UnicodeDecodeError):
            raise UsageError(f"--grid {shown(os.fspath(p))}: not valid TOML "
                             f"({shown(exc, 200)})") from None
        raise UsageError(f"--grid {exc}") from None
    except RecursionError:
        raise UsageError(f"--grid {shown(os.fspath(p))}: tables nested too deep") from None
    grid: dict[str, list[Any]] = {}

    def walk(prefix: str, table: dict[str, Any]) -> None:
        for k, v in table.items():
            name = f"{prefix}{k}"
            if isinstance(v, dict):
                walk(f"{name}.", v)
            else:
                grid[name] = list(v) if isinstance(v, list) else [v]

    walk("", data)
    if not grid:
        raise UsageError(f"--grid {os.fspath(p)}: no parameters in the file")
    return grid


def validate_grid(
    grid: dict[str, list[Any]], cls: type | None = None, fill: str = DEFAULT_FILL,
    steps: int | None = None,
) -> dict[str, list[Any]]:
    """Check names and value types against the model; return the grid with coerced values.

    Raises :class:`UsageError` naming the parameter and what it accepts. The
    number of points is checked (:data:`~market.limits.GRID_POINTS_MAX`)
    before any is made; then every point goes through the market's own
    check (``steps``: the runs' length, for its memory estimate).
    """
    from strategies import specs

    params = model_parameters(cls)
    specs.parse(fill, "--fill")
    out = {key: _grid_values(key, values, params) for key, values in grid.items()}
    _check_size(out)
    if cls is None:  # every combination's mixes and values, before any run starts
        for point in each_point(out):
            _check_point(point, fill, steps)
    else:
        for point in each_point(out):
            model_kwargs(point, fill)  # a swapped model: its mixes must still add up
    return out


def _grid_values(key: str, values: Any, params: dict[str, Any]) -> list[Any]:
    """One grid entry's values, checked and coerced: a mix share, or a model parameter."""
    mixes = [k for k in MIX_KEYS if k in params]
    if not isinstance(values, list) or not values:
        raise UsageError(f"parameter {key}: give at least one value")
    if key in RESERVED:
        raise UsageError(f"parameter {key} is set by the batch (use --seed)")
    if "." in key:
        return _mix_values(key, values, mixes)
    if key in mixes:
        raise UsageError(f"parameter {key}: set shares as {key}.<strategy>=SHARE")
    if key not in params:
        known = sorted(k for k, (allowed, _) in params.items()
                       if k not in RESERVED and k not in MIX_KEYS and allowed is not None)
        raise UsageError(f"unknown parameter {key!r} (choose from: {', '.join(known)}, "
                         f"{', '.join(m + '.<strategy>' for m in mixes)})")
    allowed, _ = params[key]
    if allowed is None:
        raise UsageError(f"parameter {key} is not a single number, flag or name and "
                         "cannot be swept by the batch")
    return [_coerce(key, v, allowed) for v in values]


def _mix_values(key: str, values: list[Any], mixes: list[str]) -> list[float]:
    """A ``buyer_mix.<strategy>`` entry: a strategy spec the registry knows, shares in [0, 1]."""
    from strategies import specs

    head, _, strat = key.partition(".")
    if head not in mixes:
        raise UsageError(f"unknown parameter {key!r} (mix shares are "
                         f"{'|'.join(mixes) or 'unsupported'}.<strategy>)")
    spec = specs.parse(strat, f"parameter {key}")
    is_file_arg = spec.cls.argument.startswith("FILE")  # a saved table, not a class
    if spec.arg is not None and is_file_arg and not Path(spec.arg).is_file():
        raise UsageError(f"parameter {key}: no such table file {spec.arg!r}")
    return [_share(key, v) for v in values]


def _check_size(grid: dict[str, list[Any]]) -> None:
    points = grid_points(grid)
    if points > GRID_POINTS_MAX:
        sizes = " x ".join(f"{len(v):,}" for v in grid.values())
        raise UsageError(f"the grid has {points:,} points ({sizes} values; at most "
                         f"{GRID_POINTS_MAX:,}): sweep fewer values")


def _check_point(point: dict[str, Any], fill: str, steps: int | None) -> None:
    """One grid point through the market's own check, the fill strategy on both sides."""
    from strategies import specs

    kwargs = model_kwargs(point, fill)
    engine = kwargs.pop("engine", "auto")  # how the model runs: not one of its parameters
    if engine not in ENGINES:
        raise UsageError(f"parameter engine must be one of {', '.join(ENGINES)} "
                         f"(got {engine!r})")
    try:
        p = market_params.check(kwargs, steps=steps)
        for side in ("seller", "buyer"):  # the fill, even where no share leaves room
            specs.check_for_game(fill, p.protocol, side, "--fill")
    except ValueError as exc:
        # a value check's message starts with the parameter's name; a size
        # cap's (UsageError) is already a whole sentence
        where = ", ".join(f"{k}={v}" for k, v in point.items())
        lead = "" if isinstance(exc, UsageError) else "parameter "
        raise UsageError(f"{lead}{exc} (at {where})") from None


def _share(key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise UsageError(f"parameter {key} must be a share in [0, 1] (got {v!r})")
    if not 0.0 <= v <= 1.0:
        raise UsageError(f"parameter {key} must be a share in [0, 1] (got {v})")
    return float(v)


def _coerce(key: str, v: Any, allowed: tuple[type, ...]) -> Any:
    if not allowed:
        if isinstance(v, list | dict):
            raise UsageError(f"parameter {key} takes a single value per grid point (got {v!r})")
        return v
    if isinstance(v, bool):
        if bool in allowed:
            return v
    elif isinstance(v, int):
        if int in allowed:
            return v
        if float in allowed:
            return float(v)
    elif isinstance(v, float):
        if float in allowed and math.isfinite(v):
            return v
    elif isinstance(v, str) and str in allowed:
        return v
    declared = BY_NAME.get(key)
    names = (declared.allowed() if declared is not None  # the range too, as the model says it
             else " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in allowed))
    raise UsageError(f"parameter {key} must be {names} (got {v!r})")


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a name"}



def grid_points(grid: dict[str, list[Any]]) -> int:
    """How many points the grid has (every combination of its values), without making them."""
    return math.prod(len(v) for v in grid.values())


def each_point(grid: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    keys = list(grid)
    return (dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values()))


def model_kwargs(point: dict[str, Any], fill: str = DEFAULT_FILL) -> dict[str, Any]:
    """Model keyword arguments for one grid point: dotted mix shares become mix dicts."""
    kwargs: dict[str, Any] = {}
    shares: dict[str, dict[str, float]] = {}
    for key, v in point.items():
        head, dot, strat = key.partition(".")
        if dot:
            shares.setdefault(head, {})[strat] = float(v)
        else:
            kwargs[key] = v
    for side, named in shares.items():
        total = sum(named.values())
        if total > 1.0 + 1e-9:
            listed = ", ".join(f"{side}.{k}={v:g}" for k, v in named.items())
            raise UsageError(f"{side} shares must sum to at most 1 (got {total:g}: {listed})")
        # a strategy at share 0 has no trader; it is kept where the market revises, since
        # mutation may bring it in (as the market command keeps it), else left out
        revises = kwargs.get("revision", "none") != "none"
        mix = {k: v for k, v in named.items() if v > 0 or revises}
        rest = 1.0 - total
        if rest > 1e-9:
            mix[fill] = mix.get(fill, 0.0) + rest
        kwargs[side] = mix
    return kwargs
