"""The batch results table: its columns, how a batch writes it, how it is read back.

One row per market run: the identifying columns (:data:`ID_COLUMNS`), the
run's parameters, its summary metrics (the ledger's), and ``error`` (None,
or the error a failed run raised). The table's metadata (``attrs["batch"]``,
kept by Parquet) names which columns are parameters and which metrics.
:mod:`market.runs.batch` writes it (:func:`results_table`), the plots and
any reader load it back checked (:func:`load_results`): this module is the
one home of that format.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market.errors import UsageError
from market.files import DATA_FILE_MAX, open_regular, shown

#: columns every row has, before the parameters and the metrics
ID_COLUMNS = ("run", "point", "iteration", "seed", "steps")
#: the last column: None, or the error a failed run raised
ERROR = "error"
#: parameter columns of population mixes (``buyer_mix.<strategy>``, ``seller_mix.<strategy>``)
MIX_PREFIXES = ("buyer_mix.", "seller_mix.")
#: metric columns of a table written without metadata
_BARE_METRICS = ("efficiency", "mean_price", "deals")


def results_table(rows: Sequence[dict[str, Any]], params: Sequence[str],
                  meta: dict[str, Any]) -> pd.DataFrame:
    """Rows in run order; columns: ids, ``params``, metrics (every other key, first-seen
    order), ``error``; ``meta`` joins the column lists in the table's metadata."""
    params = list(params)
    metrics: list[str] = []
    seen = set(ID_COLUMNS) | set(params) | {ERROR}
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                metrics.append(k)
    def column(c: str) -> list[Any]:
        return [r.get(c) for r in rows]

    # column by column, each made once (a frame's column set again and converted cost
    # 0.3 ms each: 8 ms for a table of 8 runs, a fifth of a short batch)
    data: dict[str, Any] = {c: np.array(column(c), dtype=np.int64) for c in ID_COLUMNS}
    data.update({c: column(c) for c in params})  # their types as pandas infers them
    data.update({c: np.asarray(pd.to_numeric(column(c), errors="coerce"), dtype=np.float64)
                 for c in metrics})
    data[ERROR] = pd.Series([None if pd.isna(e) else e for e in column(ERROR)], dtype=object)
    table = pd.DataFrame(data, columns=[*ID_COLUMNS, *params, *metrics, ERROR])
    table.attrs["batch"] = {"params": params, "metrics": metrics, **meta}
    return table


def load_results(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The table, its parameter columns and its metric columns.

    Both lists come from the table's own metadata (written by
    :func:`results_table`); a table without it is read by column names.
    Everything is checked before anyone uses it (:class:`UsageError` naming
    the file, one line): metadata of the batch's shape, a value in every
    row of a parameter column, numbers in the metric columns.
    """
    where = f"RESULTS {_shown(path)}"
    df = _read(path, where)
    meta = _metadata(df, where)
    if meta:
        params = [c for c in meta.get("params", []) if c in df.columns]
        metrics = [c for c in meta.get("metrics", []) if c in df.columns]
    else:
        params, metrics = _columns_by_name(df)
    _check_columns(df, params, metrics, where)
    return df, params, metrics


def _shown(path: str | os.PathLike[str]) -> str:

    return shown(os.fspath(path))


def _read(path: str | os.PathLike[str], where: str) -> pd.DataFrame:
    """The Parquet file at ``path``, read only if it is a regular file of bounded size."""

    p = Path(path)
    if not p.exists():
        raise UsageError(f"RESULTS: no such file {_shown(p)!r}")
    if p.is_dir():
        raise UsageError(f"{where}: is a directory, not a Parquet file")
    try:  # a regular file only: a FIFO or a device would never end
        fh = open_regular(p, DATA_FILE_MAX, "Parquet file")
    except ValueError as exc:
        raise UsageError(f"RESULTS {exc}") from None
    try:
        with fh:
            df = pd.read_parquet(fh)
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        reason = " ".join(str(exc).split())[:200]
        raise UsageError(f"{where}: not a readable Parquet file ({reason})") from None
    if "run" not in df.columns or ERROR not in df.columns:
        raise UsageError(f"{where}: not a batch results table "
                         "(no 'run' and 'error' columns; see `run.py batch`)")
    return df


def _metadata(df: pd.DataFrame, where: str) -> dict[str, Any]:
    """The table's batch metadata, checked for the shape :func:`results_table` writes."""
    meta = df.attrs.get("batch") or {}
    if not isinstance(meta, dict):
        raise UsageError(f"{where}: its batch metadata must be a mapping as `run.py batch` "
                         f"writes it (got {type(meta).__name__})")
    for key in ("params", "metrics"):
        names = meta.get(key, [])
        if not isinstance(names, list) or not all(isinstance(c, str) for c in names):
            raise UsageError(f"{where}: its batch metadata's {key!r} must be a list of column "
                             f"names (got {names!r:.80})")
    return meta


def _columns_by_name(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Parameters and metrics of a table without metadata, told apart by their names."""
    from market.sim.signature import model_parameters

    ids = {*ID_COLUMNS, ERROR}
    metrics = [c for c in df.columns if c not in ids
               and (c.startswith("earnings.") or c in _BARE_METRICS)]
    known = set(model_parameters())
    params = [c for c in df.columns if c not in ids and c not in metrics
              and (c in known or c.startswith(MIX_PREFIXES))]
    return params, metrics


def _check_columns(df: pd.DataFrame, params: list[str], metrics: list[str], where: str) -> None:
    for c in params:
        if df[c].isna().any():
            raise UsageError(f"{where}: parameter column {c!r} has rows without a value "
                             "(a batch table has one in every row)")
        if not df[c].map(_scalar).all():
            raise UsageError(f"{where}: parameter column {c!r} must hold single numbers, "
                             "flags or names")
    for c in metrics:
        if not pd.api.types.is_numeric_dtype(df[c]) or pd.api.types.is_bool_dtype(df[c]):
            raise UsageError(f"{where}: metric column {c!r} must hold numbers "
                             f"(got {df[c].dtype})")


def _scalar(v: Any) -> bool:
    return isinstance(v, str | int | float | bool | np.generic)
