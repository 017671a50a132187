"""Batch runs of the market: a parameter grid, many seeds, one Parquet table.

Read top to bottom, a batch is: a **grid** validated and expanded
(:mod:`market.runs.grid`) into runs (:func:`expand`, :class:`RunSpec`,
:mod:`market.runs.jobs`); the runs already finished, from an earlier table
or the parts folder (:mod:`market.runs.parts`); the rest run here, in a
process pool or on a Dask cluster (:mod:`market.runs.runners`), each stored
as it finishes; then the table (and the per-step table), written both or
neither, and the parts folder removed. Results are sorted by run index, so
the table is the same whatever the number of processes. A run that raises
is recorded with its error (column ``error``) and the others go on; runs
recorded with an error are tried again when the batch is restarted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from market.errors import UsageError
from market.files import (
    all_or_nothing,
    write_parquet,
)
from market.runs.grid import (
    DEFAULT_FILL,
    load_grid_toml,
    model_kwargs,
    parse_param_options,
    validate_grid,
)
from market.runs.jobs import RunOutcome, RunSpec, expand, run_one, run_seed
from market.runs.parts import PARTS_MARKER, PartStore, parts_dir, previous_results, steps_path
from market.runs.runners import process_pool, run_dask, run_pool

#: the batch's API in one place: the grid, the runs, the stores and the runners are
#: their own modules, and a caller may take any of it from here
__all__ = ["DEFAULT_FILL", "PARTS_MARKER", "BatchResult", "PartStore", "RunOutcome", "RunSpec",
           "expand", "load_grid_toml", "model_kwargs", "parse_param_options", "parts_dir",
           "previous_results", "process_pool", "results_table", "run_batch", "run_one",
           "run_seed", "steps_path", "validate_grid"]


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
    _say_lockstep(todo)
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


def _say_lockstep(todo: Sequence[RunSpec]) -> None:
    """Once for the batch (its runs keep quiet): which strategies put runs on the lockstep
    path."""
    from market.sim.engine import lockstep_strategies, say_lockstep

    mixes = []
    for params, fill in {(s.params, s.fill) for s in todo}:  # once per grid point, not per run
        kwargs = model_kwargs(dict(params), fill)
        if kwargs.get("engine", "auto") == "auto":
            mixes += [kwargs.get("seller_mix"), kwargs.get("buyer_mix")]
    missing = lockstep_strategies(mixes)
    if missing:
        say_lockstep(missing)


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
        run_dask(todo, per_step, scheduler, processes, finished, connect_timeout)
    elif executor is None and (processes == 1 or len(todo) == 1):
        for spec in todo:
            finished(run_one(spec, per_step))
    else:
        run_pool(todo, per_step, processes, finished, executor)


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
    inputs = sorted({i for s in specs for i in s.inputs})
    extra = {"inputs": [list(i) for i in inputs]} if inputs else {}
    return table(rows, params, {"fill": fills[0] if len(fills) == 1 else fills, **extra,
                                **(meta or {})})
