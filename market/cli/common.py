"""Shared pieces of the command line: argument types, output checks, JSON output."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

from market.errors import UsageError


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


def number_in(name: str, lo: float, hi: float) -> Callable[[str], float]:
    """argparse ``type=`` for a finite number in ``[lo, hi]``; the error names ``name``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"{name} must be a number in [{lo:g}, {hi:g}] "
                                             f"(got {text!r})")
        return value

    return parse


def _range_text(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return ""


def check_output_path(path: str | os.PathLike[str] | None, option: str) -> None:
    """Fail before any long work if ``path`` cannot be written (a directory, no permission)."""
    if path is None:
        return
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise UsageError(f"{option}: {path} is a directory, not a file")
    parent = os.path.dirname(p)
    while not os.path.exists(parent):  # folders that do not exist yet are created on write
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write {path} ({parent} is not a writable folder)")


def check_output_dir(path: str | os.PathLike[str] | None, option: str) -> None:
    """Fail before any long work if the folder ``path`` cannot be created or written."""
    if path is None:
        return
    p = os.path.abspath(os.fspath(path))
    if os.path.exists(p) and not os.path.isdir(p):
        raise UsageError(f"{option} must be a folder (got the file {os.fspath(path)!r})")
    probe = p
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe) or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write in {os.fspath(path)} ({probe} is not writable)")


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (numpy scalars and arrays converted)."""
    json.dump(data, sys.stdout, indent=2, default=_jsonable, sort_keys=False)
    sys.stdout.write("\n")


def _jsonable(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.bool_):
        return bool(obj)
    return str(obj)
