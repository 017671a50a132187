"""Saving and loading Q-tables as ``.npz`` (docs/protocol.md), never with pickle.

Arrays ``seller`` and ``buyer`` hold one table each: ``(S, A)`` in the
document's layout or ``(2, S, A)`` role-aware (0: rows used when that agent
moved first, 1: when it moved second). ``prices`` and ``rounds`` give the
game's sizes and ``meta`` a JSON string of hyper-parameters.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.files import atomic_path
from market.game import qtable
from market.game.rules import Protocol


@dataclass
class TablePair:
    """A Seller's and a Buyer's Q-tables for one game, as ``(R, S, A)`` arrays."""

    protocol: Protocol
    seller: np.ndarray
    buyer: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        S, A = qtable.n_rows(self.protocol), self.protocol.n_actions
        for name in ("seller", "buyer"):
            arr = np.asarray(getattr(self, name), dtype=float)
            if arr.ndim == 2:
                arr = arr[None]
            if arr.ndim != 3 or arr.shape[0] not in (1, 2) or arr.shape[1:] != (S, A):
                raise ValueError(
                    f"{name} table has shape {np.shape(getattr(self, name))}; expected "
                    f"({S}, {A}) or (2, {S}, {A}) for P={self.protocol.prices}, "
                    f"T={self.protocol.rounds}"
                )
            if not np.isfinite(arr).all():
                raise ValueError(f"{name} table holds non-finite values")
            setattr(self, name, arr)

    @property
    def role_aware(self) -> bool:
        return self.seller.shape[0] == 2


def save_tables(path: str | os.PathLike[str], tables: TablePair) -> None:
    """Write ``tables`` to ``path`` (``.npz``) atomically."""
    def out(a: np.ndarray) -> np.ndarray:
        return a[0] if a.shape[0] == 1 else a

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(
            fh,
            seller=out(tables.seller),
            buyer=out(tables.buyer),
            prices=np.int64(tables.protocol.prices),
            rounds=np.int64(tables.protocol.rounds),
            meta=np.str_(json.dumps(tables.meta, sort_keys=True, default=str)),
        )


def load_tables(path: str | os.PathLike[str], protocol: Protocol | None = None) -> TablePair:
    """Read a table file; ``ValueError`` with one clear line if it is missing, corrupt
    or made for another game than ``protocol``."""
    p = os.fspath(path)
    if os.path.isdir(p):
        raise ValueError(f"{p}: is a directory, not a .npz Q-table file")
    try:
        data = np.load(p, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ValueError(f"{p}: not a readable .npz Q-table file ({exc})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{p}: not a .npz Q-table file (a single .npy array)")
    try:
        with data:
            missing = {"seller", "buyer", "prices", "rounds"} - set(data.files)
            if missing:
                raise ValueError(f"{p}: not a Q-table file (missing {', '.join(sorted(missing))})")
            prices, rounds = _size(data["prices"], "prices", p), _size(data["rounds"], "rounds", p)
            seller, buyer = _real(data["seller"], "seller", p), _real(data["buyer"], "buyer", p)
            meta = json.loads(str(data["meta"])) if "meta" in data.files else {}
    except (zipfile.BadZipFile, OSError, EOFError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"{p}: not a readable .npz Q-table file ({exc})") from None
    except ValueError as exc:
        if str(exc).startswith(p):
            raise
        raise ValueError(f"{p}: not a readable .npz Q-table file ({exc})") from None
    try:
        file_protocol = Protocol(prices, rounds)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
    if protocol is not None and protocol != file_protocol:
        raise ValueError(
            f"{p}: tables are for P={prices}, T={rounds} but the game has "
            f"P={protocol.prices}, T={protocol.rounds}"
        )
    try:
        return TablePair(file_protocol, seller, buyer, meta)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None


def _size(arr: np.ndarray, name: str, path: str) -> int:
    """A game size stored in the file: one integer, nothing else."""
    if arr.shape != () or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{path}: {name} must be one integer (got {arr.dtype} {arr.shape})")
    return int(arr)


def _real(arr: np.ndarray, name: str, path: str) -> np.ndarray:
    """A Q-table stored in the file: real numbers only."""
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{path}: the {name} table must hold real numbers (got {arr.dtype})")
    return arr
