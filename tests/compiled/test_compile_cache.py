"""numba's cache, guarded (market.compiled.compile_cache): never old code, never a traceback.

Small modules compiled with the project's ``njit(cache=True)`` in a fresh
process each run: a function inlined from another file is edited between
runs under every place numba keeps its cache (beside the sources, under
``NUMBA_CACHE_DIR``, in its user folder when the sources' folder is
read-only, nowhere at all); damaged cache files are discarded with one
notice each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # end-to-end: run by CI, skippable locally (-m 'not slow')

ROOT = Path(__file__).resolve().parents[2]

A = """
from market.compiled.jit import njit


@njit(cache=True, inline="always")
def g(x):
    return x + {step}
"""

B = """
from market.compiled.jit import njit
from a import g


@njit(cache=True)
def f(x):
    return g(x)


@njit(cache=True)
def h(x):
    return x * 2
"""

CALL = "import warnings; warnings.simplefilter('always'); import b; print(b.f(1), b.h(2))"


def _run(src: Path, env: dict[str, str], wrap: Callable[..., list[str]] | None = None,
         call: str = CALL) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", call]
    if wrap is not None:  # the sources' folder (and its __pycache__) read-only
        cmd = wrap(cmd, src)
    return subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


PLACES = ["beside the sources", "NUMBA_CACHE_DIR", "read-only sources", "nowhere writable"]


@pytest.mark.parametrize("place", PLACES)
def test_an_edit_to_an_inlined_function_in_another_file_is_compiled_anew(place, tmp_path,
                                                                         request):
    """numba keys its cache on the function's own file only; f inlines g from a.py. With
    the guard, every run computes what the sources say, wherever the cache lives."""
    wrap = None
    if place in ("read-only sources", "nowhere writable"):
        wrap = request.getfixturevalue("read_only")
    src = tmp_path / "src"
    src.mkdir()
    (src / "b.py").write_text(B)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{src}",
           "XDG_CACHE_HOME": str(tmp_path / "user-cache")}
    env.pop("NUMBA_CACHE_DIR", None)
    if place == "NUMBA_CACHE_DIR":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    if place == "nowhere writable":  # numba's user folder inside the read-only mount too
        env["XDG_CACHE_HOME"] = env["HOME"] = str(src / "cache")
    seen = []
    for step in (1, 5, 1):
        (src / "a.py").write_text(A.format(step=step))
        out = _run(src, env, wrap)
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split())
        notes = [line for line in out.stderr.splitlines() if "CacheNotice" in line]
        if place == "nowhere writable":
            assert len(notes) == 1 and "compiling in memory" in notes[0], out.stderr
        else:
            assert notes == [], out.stderr
    assert seen == [["2", "4"], ["6", "4"], ["2", "4"]]
    cached = {"beside the sources": src / "__pycache__",
              "NUMBA_CACHE_DIR": tmp_path / "numba-cache",
              "read-only sources": tmp_path / "user-cache"}.get(place)
    if cached is not None:
        assert list(cached.rglob("b.f-*.nbi")), "the cache was written where numba keeps it"
    assert not (src / "__pycache__").exists() or place == "beside the sources"


DAMAGES = {
    "index garbage": ("nbi", b"garbage\n"),
    "index empty": ("nbi", b""),
    "data garbage": ("nbc", b"\x80\x04garbage"),
    "data empty": ("nbc", b""),
    "index is a folder": ("nbi", None),
}

#: one function per damage, each with its own cache files
MANY = "from market.compiled.jit import njit\n" + "".join(
    f"\n\n@njit(cache=True)\ndef h{k}(x):\n    return x * {k + 2}\n" for k in range(len(DAMAGES)))
CALL_MANY = ("import warnings; warnings.simplefilter('always'); import many; "
             f"print(*[getattr(many, 'h' + str(k))(1) for k in range({len(DAMAGES)})])")


def test_a_damaged_cache_file_is_discarded_and_rebuilt_with_one_notice(tmp_path):
    (tmp_path / "many.py").write_text(MANY)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    env.pop("NUMBA_CACHE_DIR", None)
    right = [str(k + 2) for k in range(len(DAMAGES))]
    assert _run(tmp_path, env, call=CALL_MANY).stdout.split() == right
    for k, (suffix, content) in enumerate(DAMAGES.values()):
        for path in (tmp_path / "__pycache__").glob(f"many.h{k}-*.{suffix}"):
            if content is None:
                path.unlink()
                (path / "inside").mkdir(parents=True)
            else:
                path.write_bytes(content)
    out = _run(tmp_path, env, call=CALL_MANY)
    assert out.returncode == 0 and out.stdout.split() == right, out.stderr
    notes = [line for line in out.stderr.splitlines() if "CacheNotice" in line]
    assert len(notes) == len(DAMAGES), out.stderr
    for k, damage in enumerate(DAMAGES):
        assert sum(f"numba's cache of h{k} was damaged" in n for n in notes) == 1, damage
    assert "Traceback" not in out.stderr
    again = _run(tmp_path, env, call=CALL_MANY)  # rebuilt: the next run loads without a word
    assert again.stdout.split() == right and "CacheNotice" not in again.stderr


EDIT_AFTER_IMPORT = """
import sys
import b
if len(sys.argv) > 1:  # edited after the import, before the first call (a compile)
    with open("a.py") as f:
        text = f.read().replace("x + 1", "x + 5")
    with open("a.py", "w") as f:
        f.write(text)
print(b.f(1))
"""


def test_an_edit_made_while_a_process_runs_never_names_the_code_it_had_loaded(tmp_path):
    """The first process compiles the code it imported (x + 1) and must store it under that
    code's digest, not the edited file's; the next process plays the edit."""
    (tmp_path / "a.py").write_text(A.format(step=1))
    (tmp_path / "b.py").write_text(B)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    env.pop("NUMBA_CACHE_DIR", None)
    seen = []
    for args in (["edit"], []):
        out = subprocess.run([sys.executable, "-c", EDIT_AFTER_IMPORT, *args], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split()[-1])
    assert seen == ["2", "6"]


SHARED = """
import numpy as np
from market.compiled.jit import njit


@njit(cache=True)
def g(x):
    return x * 2.0, np.zeros(2, dtype=np.int64)  # two dtypes: its wrapper reads two constants


@njit(cache=True)
def caller(x):
    a, b = g(x)
    return a.sum() + b.sum()
"""


def test_a_function_cached_alone_and_inside_another_plays_in_every_later_process(tmp_path):
    """A function compiled alone in a process that first loaded another function's cached
    library holding it (the market engine holds the ledger's ``group_means``) must not be
    cached so that a later process cannot call it. numba names a function's environment by a
    counter each process starts at 1, so both compiles could share one name (a fresh clone
    failed every call of ``group_means`` from Python with ``SystemError``)."""
    (tmp_path / "shared.py").write_text(SHARED)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    env.pop("NUMBA_CACHE_DIR", None)
    x = "import numpy as np, shared; x = np.ones(3); "
    first = _run(tmp_path, env, call=x + "print(shared.g(x)[0].sum(), shared.caller(x))")
    assert first.stdout.split() == ["6.0", "6.0"], first.stderr
    for path in (tmp_path / "__pycache__").glob("shared.g-*"):
        path.unlink()  # g alone compiles again, after its caller's library is loaded
    for _ in range(2):
        out = _run(tmp_path, env, call=x + "print(shared.caller(x), shared.g(x)[0].sum())")
        assert out.returncode == 0 and out.stdout.split() == ["6.0", "6.0"], out.stderr


RECORD = """
from typing import NamedTuple


class Record(NamedTuple):
    {fields}
"""

MAKES = """
from market.compiled.jit import njit
from record import Record


@njit(cache=True)
def first(t):
    return Record(*t).x
"""


def test_an_edit_to_a_record_type_a_compiled_function_builds_is_compiled_anew(tmp_path):
    """A compiled function that builds a record from a tuple (the market step makes the
    game's ``Pressure`` so) compiles in the order of its fields; reordered in their own file,
    the next run must read them in the new order."""
    (tmp_path / "makes.py").write_text(MAKES)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    env.pop("NUMBA_CACHE_DIR", None)
    seen = []
    for fields in ("x: float\n    y: float", "y: float\n    x: float", "x: float\n    y: float"):
        (tmp_path / "record.py").write_text(RECORD.format(fields=fields))
        out = _run(tmp_path, env, call="import makes; print(makes.first((1.0, 2.0)))")
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split()[-1])
    assert seen == ["1.0", "2.0", "1.0"]
