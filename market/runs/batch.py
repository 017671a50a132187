"""Batch runs of the market: a parameter grid, many seeds, one Parquet table.

The flow: a **grid** (parameter name -> list of values, from ``--param`` or
a TOML file) is validated against :class:`~market.sim.model.MarketModel`'s
parameters (names and types from :func:`market.sim.params.model_parameters`;
every grid point's values by :func:`market.sim.params.check`, the model's
and the market command's own check, before any run starts), then
**expanded** into :class:`RunSpec` s (every combination, ``iterations``
times each). Each run's seed comes from the batch seed and
the run's index only (``SeedSequence(seed, spawn_key=(run,))``), and results
are sorted by run index, so the table is the same whatever the number of
processes or the machine a run landed on.

Nothing is lost: every finished run is written at once (atomically) as its
own small file in a side directory next to the output (``OUT.parts/``); a
batch started again with the same output reuses every stored run whose
specification (index, parameters, seed, steps) is unchanged and runs only
the rest. The final table is written atomically, then the side directory is
removed; a later batch with the same output also reuses the rows of the
finished table. A run that raises is recorded with its error (column
``error``) and the others go on; runs recorded with an error are tried again
when the batch is restarted.

Population mixes: ``buyer_mix.<strategy>=share`` (likewise ``seller_mix``;
``<strategy>`` may be ``qlearning:FILE.npz``) gives that strategy a share of
its side; whatever the named shares leave (``1 - sum``) goes to the fill
strategy (``averaging`` by default), added to its own share if it is named
too. Shares must lie in ``[0, 1]`` and sum to at
most 1 at every grid point. A side with no ``*_mix.*`` key keeps the
model's default mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import itertools
import json
import math
import os
import re
import tomllib
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market.errors import RunFailed, UsageError
from market.files import (
    DATA_FILE_MAX,
    all_or_nothing,
    open_regular,
    read_regular,
    shown,
    write_parquet,
    write_text,
)
from market.jsonable import jsonable
from market.limits import BATCH_RUNS_MAX, GRID_POINTS_MAX
from market.processes import GUARD_ENV, die_with, quiet_resource_tracker
from market.sim import params as market_params

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

    params = market_params.model_parameters(cls)
    specs.parse(fill, "--fill")
    out = {key: _grid_values(key, values, params) for key, values in grid.items()}
    _check_size(out)
    if cls is None:  # every combination's mixes and values, before any run starts
        for point in _points(out):
            _check_point(point, fill, steps)
    else:
        for point in _points(out):
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
    names = " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in allowed)
    raise UsageError(f"parameter {key} must be {names} (got {v!r})")


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a name"}


def grid_points(grid: dict[str, list[Any]]) -> int:
    """How many points the grid has (every combination of its values), without making them."""
    return math.prod(len(v) for v in grid.values())


def _points(grid: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
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
        mix = {k: v for k, v in named.items() if v > 0}
        rest = 1.0 - total
        if rest > 1e-9:
            mix[fill] = mix.get(fill, 0.0) + rest
        kwargs[side] = mix
    return kwargs


# --- run specifications -----------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One market run: its index, grid point, iteration, seed, parameters and length."""

    run: int
    point: int
    iteration: int
    seed: int
    steps: int
    params: tuple[tuple[str, Any], ...]
    fill: str = DEFAULT_FILL

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def key(self) -> dict[str, Any]:
        """What must match for a stored result to stand for this run."""
        return {"run": self.run, "seed": self.seed, "steps": self.steps,
                "params": [list(p) for p in self.params], "fill": self.fill}


def run_seed(batch_seed: int, run: int) -> int:
    """Seed of run ``run``: from the batch seed and the run index only (63 bits)."""
    state = np.random.SeedSequence(batch_seed, spawn_key=(run,)).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


def expand(
    grid: dict[str, list[Any]], iterations: int, seed: int, steps: int, fill: str = DEFAULT_FILL,
    common_seeds: bool = False,
) -> list[RunSpec]:
    """Every grid point ``iterations`` times; run ``point * iterations + iteration``.

    Each run's seed derives from the batch seed and the run index; with
    ``common_seeds`` from the iteration alone, so that iteration ``i`` of every
    grid point draws the same market (common random numbers: a comparison of
    two points is then paired, seed by seed, and far more precise).
    """
    if iterations < 1:
        raise UsageError(f"--iterations must be >= 1 (got {iterations})")
    if steps < 1:
        raise UsageError(f"--steps must be >= 1 (got {steps})")
    points = grid_points(grid)
    if points * iterations > BATCH_RUNS_MAX:
        raise UsageError(f"--iterations: {points:,} grid point(s) x {iterations:,} iterations "
                         f"make {points * iterations:,} runs (at most {BATCH_RUNS_MAX:,})")
    specs = []
    for p, point in enumerate(_points(grid)):
        for i in range(iterations):
            run = p * iterations + i
            specs.append(RunSpec(run, p, i, run_seed(seed, i if common_seeds else run), steps,
                                 tuple(point.items()), fill))
    return specs


# --- one run ---------------------------------------------------------------------------------
@dataclass
class RunOutcome:
    """A finished run: its table row and, on request, its per-step data."""

    row: dict[str, Any]
    steps: pd.DataFrame | None = None
    key: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.row.get("error") is not None


def run_one(spec: RunSpec, per_step: bool = False) -> RunOutcome:
    """Build the model, step it, summarise it. An exception becomes the row's ``error``.

    Runs in worker processes (process pool or Dask), so it takes and returns
    plain picklable data.
    """
    row: dict[str, Any] = {"run": spec.run, "point": spec.point, "iteration": spec.iteration,
                           "seed": spec.seed, "steps": spec.steps, **spec.param_dict}
    steps_df = None
    try:
        cls = model_class()
        kwargs = model_kwargs(spec.param_dict, spec.fill)
        known = inspect.signature(cls.__init__).parameters
        for k, v in BATCH_DEFAULTS.items():
            if k in known:
                kwargs.setdefault(k, v)
        model = cls(**kwargs, seed=spec.seed)
        for _ in range(spec.steps):
            model.step()
        summary = model.summary()
        row.update({str(k): _number(v) for k, v in summary.items()})
        row["error"] = None
        if per_step:
            steps_df = step_table(model, spec.run)
    except Exception as exc:  # a failing run is recorded, the batch goes on
        row["error"] = f"{type(exc).__name__}: {exc}"
        if os.environ.get("NEGOTIATION_DEBUG"):
            row["error"] += "\n" + traceback.format_exc()
    return RunOutcome(row, steps_df, spec.key())


def _number(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def step_table(model: Any, run: int) -> pd.DataFrame:
    """The model's per-step variables (Mesa DataCollector), flattened, with the run index."""
    df = model.datacollector.get_model_vars_dataframe().reset_index(drop=True)
    df = flatten_columns(df)
    if "step" not in df.columns:
        df.insert(0, "step", np.arange(len(df), dtype=np.int64))
    df.insert(0, "run", np.int64(run))
    return df


def flatten_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Expand columns holding dicts into dotted columns (Parquet wants flat scalars)."""
    for col in list(df.columns):
        if df[col].map(lambda v: isinstance(v, dict)).any():
            dicts = df[col].map(lambda v: v if isinstance(v, dict) else {}).tolist()
            sub = pd.json_normalize(dicts)
            sub.columns = [f"{col}.{c}" for c in sub.columns]
            sub.index = df.index
            pos = df.columns.get_loc(col)
            df = pd.concat([df.iloc[:, :pos], sub, df.iloc[:, pos + 1:]], axis=1)
    return df


# --- where results live ------------------------------------------------------------------------
def steps_path(out: str | os.PathLike[str]) -> Path:
    """Per-step data file for output ``out``: ``X.parquet`` -> ``X.steps.parquet``."""
    p = Path(out)
    return p.with_name(p.stem + ".steps" + (p.suffix or ".parquet"))


def parts_dir(out: str | os.PathLike[str]) -> Path:
    """Side directory of finished runs for output ``out``: ``X.parquet`` -> ``X.parts/``."""
    p = Path(out)
    return p.with_name(p.stem + ".parts")


class PartStore:
    """Finished runs of one batch, one file per run, each written atomically.

    The folder is this project's only if it holds :data:`PARTS_MARKER` and is
    not a link: a folder of that name that the project did not make (a
    user's) is refused, not written into, and on success only the files this
    store writes (``run-NNNNNNN.json``, ``run-NNNNNNN.steps.parquet``, the
    marker) are removed, never anything else. A part is reused only if it is
    exactly what :meth:`save` wrote for that run: its row and key carry a
    SHA-256 digest (and the digest of its steps file), checked on loading; a
    part that fails is counted in :attr:`redone` and its run made again.
    """

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.dir = parts_dir(out)
        self.redone = 0
        if self.dir.is_symlink() or (self.dir.exists() and not self.dir.is_dir()):
            raise UsageError(f"--out: {shown(os.fspath(self.dir))} is a link or a file, not a "
                             "folder of run parts this project made; move it away")
        if self.dir.is_dir() and not (self.dir / PARTS_MARKER).is_file():
            raise UsageError(f"--out: the folder {shown(os.fspath(self.dir))} was not made by "
                             "run.py batch (no marker file): move it away or choose another "
                             "--out")

    def _ensure_dir(self) -> None:
        if not self.dir.is_dir():
            self.dir.mkdir(parents=True)
            (self.dir / PARTS_MARKER).write_text("run parts of run.py batch; removed when the "
                                                 "batch table is written\n")

    def _row_file(self, run: int) -> Path:
        return self.dir / f"run-{run:07d}.json"

    def _steps_file(self, run: int) -> Path:
        return self.dir / f"run-{run:07d}.steps.parquet"

    def save(self, outcome: RunOutcome) -> None:

        self._ensure_dir()
        run = int(outcome.row["run"])
        steps_digest = None
        if outcome.steps is not None:
            write_parquet(outcome.steps, self._steps_file(run))
            steps_digest = hashlib.sha256(self._steps_file(run).read_bytes()).hexdigest()
        # the row last: its presence says the run (and its steps, if any) is complete
        body = {"key": outcome.key, "row": outcome.row, "steps_sha256": steps_digest}
        text = json.dumps({**body, "sha256": _digest(body)}, default=jsonable)
        write_text(text, self._row_file(run))

    def load(self, spec: RunSpec, per_step: bool) -> RunOutcome | None:
        """The stored outcome of ``spec`` if it matches and succeeded (and has steps if needed)."""

        f = self._row_file(spec.run)
        if not os.path.lexists(f):
            return None
        try:  # a regular file only: a FIFO among the parts must not hang a resume
            data = json.loads(read_regular(f, 2**20, "run part").decode())
            outcome = self._checked(data, spec, per_step)
        except (OSError, ValueError, RecursionError):  # JSON and Unicode errors included
            outcome = None
        if outcome is None:
            self.redone += 1  # a part is there, but not one this store wrote for this run
        return outcome

    def _checked(self, data: Any, spec: RunSpec, per_step: bool) -> RunOutcome | None:
        """The outcome a part holds, if it is exactly what :meth:`save` wrote for ``spec``."""
        if not (isinstance(data, dict) and isinstance(data.get("row"), dict)
                and set(data) == {"key", "row", "steps_sha256", "sha256"}):
            return None
        body = {k: data[k] for k in ("key", "row", "steps_sha256")}
        if data["sha256"] != _digest(body) or data["key"] != _roundtrip(spec.key()):
            return None
        row = data["row"]
        if row.get("run") != spec.run or row.get("error") is not None:
            return None
        steps = None
        if per_step:
            digest = data["steps_sha256"]
            if digest is None:
                return None
            raw = read_regular_bytes(self._steps_file(spec.run))
            if hashlib.sha256(raw).hexdigest() != digest:
                return None
            steps = pd.read_parquet(io.BytesIO(raw))
        return RunOutcome(row, steps, spec.key())

    def remove(self) -> None:
        """Remove what this store wrote (its parts, the marker), then the folder if empty."""
        if not self.dir.is_dir() or self.dir.is_symlink():
            return
        for f in self.dir.iterdir():
            if PART_NAME.fullmatch(f.name) or f.name == PARTS_MARKER:
                with contextlib.suppress(OSError):
                    f.unlink()
        with contextlib.suppress(OSError):
            self.dir.rmdir()


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file, opened only if it is a regular file (``ValueError`` otherwise)."""

    with open_regular(path, DATA_FILE_MAX, "Parquet file") as fh:
        return pd.read_parquet(fh)


#: the file that says a parts folder is this project's
PARTS_MARKER = "negotiation-batch.parts"
#: the names of the files a :class:`PartStore` writes (and its temporaries)
PART_NAME = re.compile(r"\.?run-\d{7}(\.steps)?(\.[A-Za-z0-9_]+)*\.(json|parquet)")


def _digest(body: dict[str, Any]) -> str:
    """SHA-256 of a part's body, as canonical JSON."""
    text = json.dumps(body, sort_keys=True, default=jsonable, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def read_regular_bytes(path: Path) -> bytes:

    return read_regular(path, DATA_FILE_MAX, "run part")


def _roundtrip(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=jsonable))


def previous_results(
    out: str | os.PathLike[str], specs: Sequence[RunSpec], per_step: bool
) -> dict[int, RunOutcome]:
    """Successful runs of an earlier finished table at ``out`` that match ``specs``."""
    out = Path(out)
    if not out.exists():
        return {}
    try:
        table = _read_parquet(out)
        steps = _read_parquet(steps_path(out)) if per_step else None
    except (OSError, ValueError):
        return {}
    if "run" not in table.columns:
        return {}
    # The table must come from the same kind of batch: the same parameter names (a
    # dropped parameter would otherwise pass for its default) and the same --fill.
    stored = table.attrs.get("batch", {})
    names = {k for spec in specs for k, _ in spec.params}
    fills = {spec.fill for spec in specs}
    if set(stored.get("params", ())) != names or {stored.get("fill")} != fills:
        return {}
    by_run = {int(r["run"]): r for r in table.to_dict("records")}
    found: dict[int, RunOutcome] = {}
    for spec in specs:
        r = by_run.get(spec.run)
        if r is None or not _row_matches(r, spec):
            continue
        s = _steps_of(steps, spec.run) if per_step else None
        if per_step and s is None:
            continue
        found[spec.run] = RunOutcome(r, s, spec.key())
    return found


def _row_matches(row: dict[str, Any], spec: RunSpec) -> bool:
    """Whether an earlier table's row is this run finished: no error, same seed, steps and
    parameter values."""
    if isinstance(row.get("error"), str):
        return False
    if int(row["seed"]) != spec.seed or int(row["steps"]) != spec.steps:
        return False
    return all(k in row and _same(row[k], v) for k, v in spec.params)


def _steps_of(steps: pd.DataFrame | None, run: int) -> pd.DataFrame | None:
    """The run's per-step rows of an earlier steps table (None if it has none)."""
    if steps is None or "run" not in steps.columns:
        return None
    s = steps[steps["run"] == run].reset_index(drop=True)
    return None if s.empty else s


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, float) or isinstance(a, float):
        try:
            return float(a) == float(b)
        except (TypeError, ValueError):
            return False
    return a == b


# --- running a batch ----------------------------------------------------------------------------
Progress = Callable[[RunOutcome, int, int], None]


@dataclass
class BatchResult:
    """The results table (one row per run, sorted by run) and what happened."""

    table: pd.DataFrame
    steps: pd.DataFrame | None
    reused: int
    ran: int
    failed: int
    out: Path | None = None
    files: list[Path] = field(default_factory=list)
    #: parts found damaged (not exactly what was written for their run) and run again
    redone: int = 0


def run_batch(
    specs: Sequence[RunSpec],
    out: str | os.PathLike[str] | None = None,
    processes: int | None = None,
    scheduler: str | None = None,
    per_step: bool = False,
    on_result: Progress | None = None,
    meta: dict[str, Any] | None = None,
    connect_timeout: float = 5.0,
    executor: Any = None,
) -> BatchResult:
    """Run every spec not already finished, store each as it ends, write the table.

    ``processes``: worker processes (default: all cores; 1 runs in this
    process). ``scheduler``: ``None`` for a local process pool, ``"local"``
    for a Dask ``LocalCluster`` with ``processes`` workers, or the address of
    a Dask scheduler. ``on_result(outcome, done, total)`` is called for every
    finished run, reused ones included. ``executor``: a running
    ``concurrent.futures`` pool to use instead of starting one (benchmarks
    keep a warm pool).
    """
    processes = processes or os.cpu_count() or 1
    if processes < 1:
        raise UsageError(f"--processes must be >= 1 (got {processes})")
    store = PartStore(out) if out is not None else None
    done = _finished_before(specs, out, store, per_step)
    reused, total = len(done), len(specs)
    for i, outcome in enumerate(sorted(done.values(), key=lambda o: o.row["run"])):
        if on_result is not None:
            on_result(outcome, i + 1, total)

    def finished(outcome: RunOutcome) -> None:
        if store is not None:
            store.save(outcome)
        done[int(outcome.row["run"])] = outcome
        if on_result is not None:
            on_result(outcome, len(done), total)

    todo = [s for s in specs if s.run not in done]
    if todo:
        _run(todo, per_step, scheduler, processes, finished, connect_timeout, executor)
    ordered = [done[s.run] for s in sorted(specs, key=lambda s: s.run)]
    table = results_table([o.row for o in ordered], specs, meta)
    steps = _steps_table(ordered) if per_step else None
    files = _write(table, steps, out, store) if out is not None else []
    failed = int(table["error"].notna().sum())
    return BatchResult(table, steps, reused, total - reused, failed,
                       Path(out) if out is not None else None, files,
                       store.redone if store is not None else 0)


def _finished_before(specs: Sequence[RunSpec], out: str | os.PathLike[str] | None,
                     store: PartStore | None, per_step: bool) -> dict[int, RunOutcome]:
    """Runs already done: rows of an earlier finished table at ``out``, then stored parts."""
    if out is None or store is None:
        return {}
    done = previous_results(out, specs, per_step)
    for spec in specs:
        if spec.run not in done:
            got = store.load(spec, per_step)
            if got is not None:
                done[spec.run] = got
    return done


def _run(todo: Sequence[RunSpec], per_step: bool, scheduler: str | None, processes: int,
         finished: Callable[[RunOutcome], None], connect_timeout: float, executor: Any) -> None:
    """The runs left, on a Dask cluster, in a process pool or here."""
    if scheduler in (None, "local"):
        # compile (or load) the market engine here, once: workers then load it from numba's
        # cache instead of each compiling it at the same time on a cold machine
        from market.sim.engine import ensure_compiled

        ensure_compiled()
    if scheduler:
        _run_dask(todo, per_step, scheduler, processes, finished, connect_timeout)
    elif executor is None and (processes == 1 or len(todo) == 1):
        for spec in todo:
            finished(run_one(spec, per_step))
    else:
        _run_pool(todo, per_step, processes, finished, executor)


def _steps_table(ordered: Sequence[RunOutcome]) -> pd.DataFrame:
    frames = [o.steps for o in ordered if o.steps is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _write(table: pd.DataFrame, steps: pd.DataFrame | None, out: str | os.PathLike[str],
           store: PartStore) -> list[Path]:
    """The table and its steps, both or neither; then the parts folder is removed."""

    files: list[Path] = []
    with all_or_nothing():
        files.append(write_parquet(table, out))
        if steps is not None:
            files.append(write_parquet(steps, steps_path(out)))
    store.remove()
    return files


def results_table(
    rows: Sequence[dict[str, Any]], specs: Sequence[RunSpec], meta: dict[str, Any] | None = None
) -> pd.DataFrame:
    """The batch's table (:func:`market.sim.results.results_table`): the specs' parameters
    in first-seen order, and the fill strategy (or strategies) in its metadata."""
    from market.sim.results import results_table as table

    params = list(dict.fromkeys(k for s in specs for k, _ in s.params))
    fills = sorted({s.fill for s in specs})
    return table(rows, params, {"fill": fills[0] if len(fills) == 1 else fills, **(meta or {})})


def process_pool(processes: int) -> Any:
    """A process pool for batch runs.

    forkserver: workers never inherit the parent's threads (progress
    display, Dask); the server imports the model once and each worker is a
    fork of it, so starting a worker costs no imports.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor


    quiet_resource_tracker()
    os.environ[GUARD_ENV] = str(os.getpid())  # read by the fork server's guard
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["market.runs.forkserver_guard", "market.runs.batch",
                                "market.sim.model"])
    # each worker ends when this process does, even if it is killed outright
    return ProcessPoolExecutor(max_workers=processes, mp_context=ctx, initializer=die_with,
                               initargs=(os.getpid(),))


def _run_pool(
    todo: Sequence[RunSpec],
    per_step: bool,
    processes: int,
    finished: Callable[[RunOutcome], None],
    executor: Any = None,
) -> None:
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    owned = executor is None
    pool = process_pool(processes) if owned else executor
    with contextlib.ExitStack() as stack:
        if owned:
            stack.enter_context(pool)
        pending = set()
        queue = iter(todo)
        # keep a bounded number of runs in flight so an interrupt loses little work
        for spec in itertools.islice(queue, 4 * processes):
            pending.add(pool.submit(run_one, spec, per_step))
        try:
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in ready:
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        raise RunFailed(
                            "a worker process died (killed, or out of memory); every finished "
                            "run is saved: run the same command again to go on"
                        ) from None
                    finished(outcome)
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(run_one, nxt, per_step))
        except BaseException:
            for fut in pending:
                fut.cancel()
            if owned:  # stop now: do not wait for the runs in flight (they are saved parts)
                _stop_workers(pool)
            raise


def _stop_workers(pool: Any) -> None:
    """Cancel what is queued and end the pool's worker processes at once."""
    workers = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in workers:
        with contextlib.suppress(Exception):
            proc.join(5)


def _run_dask(
    todo: Sequence[RunSpec],
    per_step: bool,
    scheduler: str,
    processes: int,
    finished: Callable[[RunOutcome], None],
    connect_timeout: float,
) -> None:
    from market.runs.cluster import connect

    with connect(scheduler, processes, connect_timeout) as client:
        from distributed import as_completed

        futures = client.map(run_one, list(todo), per_step=per_step, pure=False)
        try:
            for fut in as_completed(futures):
                finished(fut.result())
        except BaseException:
            with contextlib.suppress(Exception):
                client.cancel(futures)
            raise
