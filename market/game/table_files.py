"""Saving and loading Q-tables as ``.npz`` (docs/pages/protocol.md), never with pickle.

Arrays ``seller`` and ``buyer`` hold one table each: ``(S, A)`` in the
document's layout or ``(2, S, A)`` role-aware (0: rows used when that agent
moved first, 1: when it moved second). ``prices`` and ``rounds`` give the
game's sizes and ``meta`` a JSON string of hyper-parameters.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.files import atomic_path, open_regular, shown
from market.game import pressure, qtable
from market.game.rules import Protocol
from market.limits import TABLE_CELLS_MAX


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
        if self.seller.shape[0] != self.buyer.shape[0]:
            raise ValueError(
                "the seller and buyer tables have different layouts (one role-aware "
                "(2, S, A), the other (S, A)); both must have the same"
            )

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
            # the game's time pressure, only where it has some: a file of the document's
            # game is the same as before it existed
            **_pressure_arrays(tables.protocol),
        )


def _pressure_arrays(protocol: Protocol) -> dict[str, np.ndarray]:
    """The arrays that record a game's time pressure, one per kind in force (none for the
    document's game): two numbers for a kind with a field per side, else one."""
    return {name: np.array(values) if len(values) > 1 else np.float64(values[0])
            for name, values in pressure.in_force(protocol).items()}


def _pressure_fields(read: Any) -> dict[str, float]:
    """Protocol fields from a file's pressure arrays (``read(name)``: the array, or None)."""
    fields: dict[str, float] = {}
    for kind in pressure.KINDS:
        arr = read(kind.name)
        if arr is not None:
            fields.update(zip((d.name for d in kind.params),
                              (float(x) for x in np.atleast_1d(arr)), strict=True))
    return fields


#: the arrays of real numbers that record the game's time pressure, and their shapes
PRESSURE_SHAPES = {k.name: (len(k.params),) if len(k.params) > 1 else () for k in pressure.KINDS}
#: what a table file may hold: these arrays, no more
ARRAYS = ("seller", "buyer", "prices", "rounds", "meta", *PRESSURE_SHAPES)
#: ``meta`` is short JSON: at most this many characters and this many levels of nesting
META_CHARS_MAX = 1_000_000
META_DEPTH_MAX = 32
#: bytes of one table at the cell cap (float64), and of a .npy header at most
TABLE_BYTES_MAX = TABLE_CELLS_MAX * 8 + 65_536
HEADER_BYTES_MAX = 65_536
#: digits of one integer in ``meta`` (seeds and counts need far fewer)
META_DIGITS_MAX = 100
#: a table file holds two tables at most (compressed or not) and a bounded meta
FILE_BYTES_MAX = 2 * TABLE_BYTES_MAX + 4 * META_CHARS_MAX + 1_048_576


def load_tables(path: str | os.PathLike[str], protocol: Protocol | None = None) -> TablePair:
    """Read a table file; ``ValueError`` naming the file in one line if it is missing,
    corrupt, too large, of the wrong types, or made for another game than ``protocol``.

    Nothing is trusted before it is checked: the zip's members and every
    array's header (dtype, shape, bytes) are read and checked against the
    sizes the game allows before any array is loaded, so a lying header
    cannot make us allocate; ``meta`` must be a bounded JSON object; no
    pickle is ever read.
    """
    p = shown(os.fspath(path), 200)
    with open_regular(path, FILE_BYTES_MAX, ".npz Q-table file") as fh:
        if fh.read(6) == b"\x93NUMPY":
            raise ValueError(f"{p}: not a .npz Q-table file (a single .npy array); "
                             "run.py train --save writes one")
        fh.seek(0)
        return _load(fh, p, protocol)


def peek_tables(path: str | os.PathLike[str]) -> tuple[Protocol, int]:
    """A table file's game and the cells of its larger table, from its headers alone.

    For callers that must refuse a file by its size before loading it (the
    view); the same checks as :func:`load_tables` up to the arrays' data.
    """
    p = shown(os.fspath(path), 200)
    with open_regular(path, FILE_BYTES_MAX, ".npz Q-table file") as fh:
        try:
            with zipfile.ZipFile(fh) as zf:
                headers = _headers(zf, p)
                sizes = [_size(_read(zf, name, headers[name], p), name, p)
                         for name in ("prices", "rounds")]
                fields = _pressure_fields(lambda name: _read(zf, name, headers[name], p)
                                          if name in headers else None)
        except zipfile.BadZipFile:
            raise ValueError(f"{p}: not a .npz Q-table file (not a zip archive of arrays)"
                             ) from None
        except (OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
            raise ValueError(f"{p}: not a readable .npz Q-table file ({shown(exc)})") from None
    try:
        protocol = Protocol(*sizes, **fields)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
    cells = max(int(np.prod(headers[n][1], dtype=object)) for n in ("seller", "buyer"))
    return protocol, cells


def _load(fh: Any, p: str, protocol: Protocol | None) -> TablePair:
    try:
        with zipfile.ZipFile(fh) as zf:
            headers = _headers(zf, p)
            arrays = {name: _read(zf, name, headers[name], p) for name in headers}
    except zipfile.BadZipFile:
        raise ValueError(f"{p}: not a .npz Q-table file (not a zip archive of arrays)") from None
    except (OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
        raise ValueError(f"{p}: not a readable .npz Q-table file "
                         f"({shown(exc)})") from None
    prices, rounds = _size(arrays["prices"], "prices", p), _size(arrays["rounds"], "rounds", p)
    meta = _meta(arrays["meta"], p) if "meta" in arrays else {}
    try:
        file_protocol = Protocol(prices, rounds, **_pressure_fields(arrays.get))
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None
    if protocol is not None and protocol != file_protocol:
        both = file_protocol.discounted or protocol.discounted
        raise ValueError(f"{p}: tables are for {game_text(file_protocol, both, protocol)} but "
                         f"the game has {game_text(protocol, both, file_protocol)}")
    try:
        return TablePair(file_protocol, arrays["seller"], arrays["buyer"], meta)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None


def _headers(zf: zipfile.ZipFile, path: str
             ) -> dict[str, tuple[np.dtype, tuple[int, ...], zipfile.ZipInfo]]:
    """Each member's dtype and shape, from its ``.npy`` header, checked before any data.

    The archive's list of members is checked first (only ``NAME.npy`` for the
    names of :data:`ARRAYS`, none encrypted, each declaring at most what its
    header will allow), so a crafted archive is refused before anything of it
    is decompressed.
    """
    members = _members(zf, path)
    return {name: _header(zf, name, info, path) for name, info in members.items()}


def _members(zf: zipfile.ZipFile, path: str) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by array name: only ``NAME.npy`` of :data:`ARRAYS`, none
    encrypted, none declaring more than a table may hold, the four needed ones there."""
    infos = zf.infolist()
    if len(infos) > len(ARRAYS):
        raise ValueError(f"{path}: not a Q-table file ({len(infos):,} members; at most "
                         f"{len(ARRAYS)}: {', '.join(ARRAYS)})")
    members: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename.removesuffix(".npy")
        if info.filename != f"{name}.npy" or name not in ARRAYS or name in members:
            raise ValueError(f"{path}: not a Q-table file (member {shown(info.filename, 60)!r};"
                             f" expected {', '.join(a + '.npy' for a in ARRAYS)})")
        if info.flag_bits & 0x1:
            raise ValueError(f"{path}: {name} is encrypted; table files are plain archives")
        if info.file_size > TABLE_BYTES_MAX:
            raise ValueError(f"{path}: {name} declares {info.file_size:,} bytes (at most "
                             f"{TABLE_BYTES_MAX:,})")
        members[name] = info
    missing = {"seller", "buyer", "prices", "rounds"} - set(members)
    if missing:
        raise ValueError(f"{path}: not a Q-table file (missing {', '.join(sorted(missing))})")
    return members


def _header(zf: zipfile.ZipFile, name: str, info: zipfile.ZipInfo, path: str
            ) -> tuple[np.dtype, tuple[int, ...], zipfile.ZipInfo]:
    """One member's dtype and shape from its ``.npy`` header, checked against what the
    member may be and against the size the archive declares for it."""
    with zf.open(info) as fh:
        try:
            fmt = np.lib.format
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else (
                fmt.read_array_header_2_0)
            shape, _, dtype = read(fh, max_header_size=10_000)
        except ValueError as exc:
            raise ValueError(f"{path}: {name} is not a numpy array ({exc})") from None
    if dtype.hasobject:
        raise ValueError(f"{path}: {name} holds Python objects; table files hold numbers "
                         "and text only (never pickles)")
    if any(d < 0 for d in shape) or len(shape) > 3:
        raise ValueError(f"{path}: {name} has shape {shape}: not a Q-table")
    cells = int(np.prod(shape, dtype=object))
    if name in ("seller", "buyer") and cells > TABLE_CELLS_MAX:
        raise ValueError(f"{path}: {name} has {cells:,} cells (at most {TABLE_CELLS_MAX:,})")
    if name in ("discount", "cost") and shape != (2,):
        raise ValueError(f"{path}: {name} must be two numbers, the Seller's and the "
                         f"Buyer's (got shape {shape})")
    if name not in ("seller", "buyer", "discount", "cost") and shape != ():
        what = "one JSON text" if name == "meta" else "one integer"
        raise ValueError(f"{path}: {name} must be {what} (got shape {shape})")
    if cells * dtype.itemsize > info.file_size:
        raise ValueError(f"{path}: {name}'s header claims more data than the file holds")
    if info.file_size > cells * dtype.itemsize + HEADER_BYTES_MAX:
        raise ValueError(f"{path}: {name} declares {info.file_size:,} bytes for "
                         f"{cells:,} values: not a numpy array as saved")
    return dtype, shape, info


def _read(zf: zipfile.ZipFile, name: str,
          header: tuple[np.dtype, tuple[int, ...], zipfile.ZipInfo], path: str) -> np.ndarray:
    dtype, _, info = header
    if name == "meta":
        if dtype.kind != "U" or dtype.itemsize // 4 > META_CHARS_MAX:
            raise ValueError(f"{path}: meta must be one JSON text of at most "
                             f"{META_CHARS_MAX:,} characters (got {dtype})")
    elif name in ("seller", "buyer"):
        if dtype.kind not in "fiu":
            raise ValueError(f"{path}: the {name} table must hold real numbers (got {dtype})")
    elif name in PRESSURE_SHAPES:
        if dtype.kind != "f":
            n = (PRESSURE_SHAPES[name] or (1,))[0]  # a scalar array holds one
            what = "one real number" if n == 1 else f"{n} real numbers (a side's each)"
            raise ValueError(f"{path}: {name} must hold {what} (got {dtype})")
    elif dtype.kind not in "iu":
        raise ValueError(f"{path}: {name} must be one integer (got {dtype})")
    with zf.open(info) as fh:
        return np.lib.format.read_array(fh, allow_pickle=False)


def game_text(protocol: Protocol, discounts: bool | None = None,
              like: Protocol | None = None) -> str:
    """``P=5, T=5`` and the time pressure (each kind the game has, or that ``like``, the game
    it is set beside, has; the discounts also if asked), for messages."""
    text = f"P={protocol.prices}, T={protocol.rounds}"
    force = pressure.in_force(protocol)
    beside = pressure.in_force(like) if like is not None else {}
    for kind in pressure.KINDS:
        shown = (kind.name in force if discounts is None else discounts) \
            if kind.params == pressure.DISCOUNTS else kind.name in force or kind.name in beside
        if shown:
            values = [getattr(protocol, d.name) for d in kind.params]
            text += (f", {kind.name} {values[0]:g}" if len(values) == 1 else
                     f", {kind.name} Seller {values[0]:g}, Buyer {values[1]:g}")
    return text


def _size(arr: np.ndarray, name: str, path: str) -> int:
    """A game size stored in the file (shape and dtype checked from its header)."""
    return int(arr)


def _meta(arr: np.ndarray, path: str) -> dict[str, Any]:
    """The JSON object in ``meta``, refused before parsing if it nests too deep."""
    text = str(arr)
    depth = _depth(text)
    if depth > META_DEPTH_MAX:
        raise ValueError(f"{path}: meta nests {depth} levels deep (at most {META_DEPTH_MAX})")
    def bounded_int(digits: str) -> int:  # Python refuses over 4,300 digits in its own words
        if len(digits.lstrip("-")) > META_DIGITS_MAX:
            raise ValueError(f"{path}: meta holds an integer of {len(digits):,} digits (at "
                             f"most {META_DIGITS_MAX})")
        return int(digits)

    try:
        meta = json.loads(text, parse_int=bounded_int)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: meta is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: meta must be a JSON object (got {type(meta).__name__})")
    return meta


def _depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` outside JSON strings (no recursion, so any length)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest
