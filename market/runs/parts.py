"""Where a batch's results live: the finished table, and the parts of an unfinished one.

Nothing is lost: every finished run is written at once (atomically) as its
own small file in a side directory next to the output (``OUT.parts/``); a
batch started again with the same output reuses every stored run whose
specification (index, parameters, seed, steps, and the content of every
file a run reads) is unchanged and runs only the rest. A later batch with
the same output also reuses the rows of the finished table.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from market.errors import UsageError
from market.files import (
    DATA_FILE_MAX,
    open_regular,
    read_regular,
    shown,
    write_parquet,
    write_text,
)
from market.jsonable import jsonable
from market.runs.jobs import RunOutcome, RunSpec


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
        for f in (self._row_file(run), self._steps_file(run)):
            _set_aside(f)
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


def _set_aside(path: Path) -> None:
    """Move what stands where a part is to be written, if it is not a regular file (a folder,
    a FIFO): the run is redone and its part written; nothing is deleted."""
    if os.path.lexists(path) and not (path.is_file() and not path.is_symlink()):
        os.replace(path, path.with_name(f"{path.name}.set-aside-{os.getpid()}"))


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


def _same_batch(stored: dict[str, Any], specs: Sequence[RunSpec]) -> bool:
    """Whether a table's batch record is of the same kind of batch as ``specs``: the same
    parameter names (a dropped parameter would otherwise pass for its default), the same
    --fill, and the same inputs (a file a run reads, a saved table, changed since: its rows
    are not this batch's)."""
    names = {k for spec in specs for k, _ in spec.params}
    fills = {spec.fill for spec in specs}
    if set(stored.get("params", ())) != names or {stored.get("fill")} != fills:
        return False
    inputs = sorted({tuple(i) for spec in specs for i in spec.inputs})
    return sorted(tuple(i) for i in stored.get("inputs", ())) == inputs


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
    if "run" not in table.columns or not _same_batch(table.attrs.get("batch", {}), specs):
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
