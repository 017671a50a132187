"""One run of a batch: its specification (index, grid point, seed, parameters, length),
how its seed is derived, and running it into one row of the results table.

Each run's seed comes from the batch seed and the run's index only
(``SeedSequence(seed, spawn_key=(run,))``), so the table is the same
whatever the number of processes or the machine a run landed on.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market.errors import UsageError, reraise_signal
from market.files import DATA_FILE_MAX, read_regular
from market.limits import BATCH_RUNS_MAX
from market.runs.grid import (
    BATCH_DEFAULTS,
    DEFAULT_FILL,
    each_point,
    grid_points,
    model_class,
    model_kwargs,
)
from market.sim.engine import LockstepNotice


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
    #: the files the run reads (a saved Q-table, a user's strategy), each with the sha256 of
    #: its content: a stored result stands for this run only if they are unchanged
    inputs: tuple[tuple[str, str], ...] = ()

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def key(self) -> dict[str, Any]:
        """What must match for a stored result to stand for this run."""
        out = {"run": self.run, "seed": self.seed, "steps": self.steps,
               "params": [list(p) for p in self.params], "fill": self.fill}
        if self.inputs:  # absent for runs that read no file: their stored keys stand as they were
            out["inputs"] = [list(i) for i in self.inputs]
        return out


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
    digests: dict[Any, Any] = {}
    for p, point in enumerate(each_point(grid)):
        inputs = input_files(model_kwargs(point, fill), digests)
        for i in range(iterations):
            run = p * iterations + i
            specs.append(RunSpec(run, p, i, run_seed(seed, i if common_seeds else run), steps,
                                 tuple(point.items()), fill, inputs))
    return specs


def input_files(kwargs: dict[str, Any], digests: dict[Any, Any] | None = None
                ) -> tuple[tuple[str, str], ...]:
    """The files a run with these model arguments reads, with their content's sha256 (the
    argument of ``NAME:FILE`` strategies; a user's rule, ``FILE.py:Class`` or
    ``package.module:Class``, with every file of the user's it imports, directly or not:
    :func:`market.compiled.build.user_files`), sorted by path; ``digests`` caches them, and
    each rule's file set, across the grid points of a batch."""
    from market.compiled import build
    from strategies import specs

    cache = {} if digests is None else digests
    found = set()
    for mix in (kwargs.get("seller_mix"), kwargs.get("buyer_mix")):
        for name in mix or {}:
            spec = specs.parse(name)
            if spec.arg and os.path.isfile(spec.arg):
                found.add(os.path.abspath(spec.arg))
            source = (spec.source or "").rpartition(":")[0]
            rule = (Path(source) if source.endswith(".py") and os.path.isfile(source)
                    else build.module_file(source) if source else None)
            if rule is not None:  # a rule's file set, read once a batch
                if ("files", rule) not in cache:
                    cache["files", rule] = [str(p) for p in build.user_files(rule)]
                found.update(cache["files", rule])
    out = []
    for path in sorted(found):
        if path not in cache:
            cache[path] = hashlib.sha256(read_regular(Path(path), DATA_FILE_MAX,
                                                     "a file a run reads")).hexdigest()
        out.append((path, cache[path]))
    return tuple(out)


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
        with warnings.catch_warnings():  # the batch says it once, not every run in every worker
            warnings.simplefilter("ignore", LockstepNotice)
            model = cls(**kwargs, seed=spec.seed)
        model.run(spec.steps)  # a period's steps in one compiled call where it can
        summary = model.summary()
        row.update({str(k): _number(v) for k, v in summary.items()})
        row["error"] = None
        if per_step:
            steps_df = step_table(model, spec.run)
    except Exception as exc:  # a failing run is recorded, the batch goes on
        reraise_signal(exc)  # ... but Ctrl-C inside a compiled step stops it
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
