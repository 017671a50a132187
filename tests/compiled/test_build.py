"""Compiling as a build step (market.compiled.build): never old code, never an untrusted cache.

The guarantees, each run in fresh processes: an edit to any file compiled
code depends on (the package's, a user's rule file, any file of the user's
it imports) plays on the next run, wherever the caches are placed; a cache
folder another user could write to is never loaded; a damaged cache file is
discarded with one note; generated modules are written once per digest.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from market.compiled import build, internals

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


def _env(tmp_path: Path, *paths: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (ROOT, *paths))),
           "NEGOTIATION_MARKET_CACHE": str(tmp_path / "cache"), **more}
    env.pop("NUMBA_CACHE_DIR", None)
    return env


def _run(cwd: Path, env: dict[str, str], call: str = CALL,
         wrap: Callable[..., list[str]] | None = None, *args: str
         ) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", call, *args]
    if wrap is not None:  # the sources' folder read-only
        cmd = wrap(cmd, cwd)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _notes(out: subprocess.CompletedProcess) -> list[str]:
    return [line for line in out.stderr.splitlines() if "CompileNotice" in line]


def _nowhere(tmp_path: Path) -> dict[str, str]:
    """Neither the cache folder nor the fallback in $TMPDIR can be used."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (tmpdir / f"negotiation-market-{os.getuid()}").symlink_to(tmp_path)  # not a folder
    return {"NEGOTIATION_MARKET_CACHE": str(blocked / "cache"), "TMPDIR": str(tmpdir)}


PLACES = ["cache folder", "NUMBA_CACHE_DIR", "read-only sources", "nowhere writable"]


@pytest.mark.slow
@pytest.mark.parametrize("place", PLACES)
def test_an_edit_to_a_function_inlined_from_another_file_plays_on_the_next_run(
        place, tmp_path, request):
    """f inlines g from a.py; numba keys its own cache on f's file only. Every run computes
    what the sources say, whatever the environment places caches."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "b.py").write_text(B)
    env = _env(tmp_path, src)
    wrap = request.getfixturevalue("read_only") if place == "read-only sources" else None
    if place == "NUMBA_CACHE_DIR":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    if place == "nowhere writable":
        env.update(_nowhere(tmp_path))
    seen = []
    for step in (1, 5, 1):
        (src / "a.py").write_text(A.format(step=step))
        out = _run(src, env, CALL, wrap)
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split())
        notes = _notes(out)
        if place == "nowhere writable":
            assert len(notes) == 1 and "compiling in memory" in notes[0], out.stderr
        else:
            assert notes == [], out.stderr
    assert seen == [["2", "4"], ["6", "4"], ["2", "4"]]
    assert not list(src.rglob("*.nbi")), "nothing cached beside the sources"


RULE = '''
from helper import LEVEL
from strategies.rule_based import RuleBased


class Fixed(RuleBased):
    name = "fixed-level"

    @staticmethod
    def target(turn, rng):
        return max(turn.lo, min(turn.hi, LEVEL))
'''

NEGOTIATE = """
import sys, numpy as np
from market.game.protocol import Side, negotiate
from market.game.rules import Protocol
import strategies
from strategies import specs
p = Protocol(9, 3)
s = specs.build(sys.argv[1], "seller", p)
if len(sys.argv) > 2:  # edited after the rule was defined, before its first compile
    with open(sys.argv[2], "w") as f:
        f.write("LEVEL = 8\\n")
b = strategies.make("hardliner", "buyer", 1, p)
rec = negotiate(p, Side.single(s, 1, 1, 9), Side.single(b, 1, 1, 9), 0,
                np.random.default_rng(0))
print(int(rec.actions[0, 0]) + 1)
"""


@pytest.mark.slow
def test_a_users_file_edited_while_a_process_runs_never_names_the_code_it_had_loaded(
        tmp_path):
    """The first process compiles the rule as it was defined (level 3) though the helper it
    imports is edited before the compile; it must not be cached under the edited files'
    digest: the next process plays the edit (8)."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "fixed.py").write_text(RULE)
    (rules / "helper.py").write_text("LEVEL = 3\n")
    env = _env(tmp_path, rules)
    spec = f"{rules / 'fixed.py'}:Fixed"
    first = _run(rules, env, NEGOTIATE, None, spec, str(rules / "helper.py"))
    second = _run(rules, env, NEGOTIATE, None, spec)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert [first.stdout.split()[-1], second.stdout.split()[-1]] == ["3", "8"]


#: ways a rule reaches a value in another file of the user's: its imports, the value its
#: target returns, the target's extra parameters, a local of the function that makes it
REACHES = {
    "from helper import LEVEL": ("from helper import LEVEL", "LEVEL", "", ""),
    "import pkg.sub; pkg.sub.LEVEL": ("import pkg.sub", "pkg.sub.LEVEL", "", ""),
    "a default argument": ("from helper import LEVEL", "k", ", k=LEVEL", ""),
    "import pkg.sub; pkg.sub.level()": ("import pkg.sub", "pkg.sub.level()", "", ""),
    "a closure": ("from helper import LEVEL", "k", "", "k = LEVEL"),
}

REACHING = '''
{imports}
from strategies.rule_based import RuleBased


def made():  # the target, made as a closure (over {local_name})
    {local}
    def target(turn, rng{default}):
        return max(turn.lo, min(turn.hi, {value}))
    return target


class Reaches(RuleBased):
    name = "reaches-level"
    target = staticmethod(made())
'''

#: a helper file at ``level``: the value, and a compiled function returning it
HELPER = '''LEVEL = {level}

from market.compiled.jit import njit


@njit
def level():
    return LEVEL
'''


@pytest.mark.slow
@pytest.mark.parametrize("way", REACHES)
def test_an_edit_to_a_value_a_rule_reaches_in_another_file_plays_on_the_next_run(way, tmp_path):
    imports, value, default, local = REACHES[way]
    rules = tmp_path / "rules"
    (rules / "pkg").mkdir(parents=True)
    (rules / "pkg" / "__init__.py").write_text("")
    (rules / "reaching.py").write_text(REACHING.format(
        imports=imports, value=value, default=default, local=local or "pass",
        local_name=local.split(" =")[0] or "nothing"))
    env = _env(tmp_path, rules)
    seen = []
    for level in (3, 7):
        for helper in (rules / "helper.py", rules / "pkg" / "sub.py"):
            helper.write_text(HELPER.format(level=level))
        out = _run(rules, env, NEGOTIATE, None, f"{rules / 'reaching.py'}:Reaches")
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split()[-1])
    assert seen == ["3", "7"]


def test_a_users_file_set_follows_its_imports_but_not_the_library_or_the_package(tmp_path):
    """What a rule's file brings in: its own imports of the user's files, directly or not
    (``import pkg.sub``, ``from pkg import mod``), never the standard library, site-packages
    or this package (the build digest holds those)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub.py").write_text("import deep\nK = 1\n")
    (tmp_path / "pkg" / "mod.py").write_text("M = 2\n")
    (tmp_path / "deep.py").write_text("D = 3\n")
    (tmp_path / "rule.py").write_text("import os, numpy\nimport pkg.sub\nfrom pkg import mod\n"
                                      "from strategies.rule_based import RuleBased\n")
    sys.path.insert(0, str(tmp_path))
    try:
        files = build.file_set([tmp_path / "rule.py"], lambda p: p.is_relative_to(tmp_path))
    finally:
        sys.path.remove(str(tmp_path))
    names = sorted(p.relative_to(tmp_path).as_posix() for p in files)
    assert names == ["deep.py", "pkg/__init__.py", "pkg/mod.py", "pkg/sub.py", "rule.py"]


DAMAGES = {
    "index garbage": ("nbi", b"garbage\n"),
    "index empty": ("nbi", b""),
    "data garbage": ("nbc", b"\x80\x04garbage"),
    "data empty": ("nbc", b""),
    "index is a folder": ("nbi", None),
}

#: one function per damage, each with its own cache files, in a generated module (cached)
MANY = "from market.compiled.jit import njit\n" + "".join(
    f"\n\n@njit(cache=True)\ndef h{k}(x):\n    return x * {k + 2}\n" for k in range(len(DAMAGES)))
CALL_MANY = ("import warnings; warnings.simplefilter('always')\n"
             "from market.compiled import build\n"
             f"many = build.module('many', {MANY!r})\n"
             f"print(*[getattr(many, 'h' + str(k))(1) for k in range({len(DAMAGES)})])")


@pytest.mark.slow
def test_a_damaged_cache_file_is_discarded_and_rebuilt_with_one_notice(tmp_path):
    env = _env(tmp_path)
    right = [str(k + 2) for k in range(len(DAMAGES))]
    assert _run(tmp_path, env, CALL_MANY).stdout.split() == right
    cache = tmp_path / "cache"
    for k, (suffix, content) in enumerate(DAMAGES.values()):
        found = list(cache.rglob(f"*.h{k}-*.{suffix}"))
        assert found, f"h{k} was cached in the build's folder"
        for path in found:
            if content is None:
                path.unlink()
                (path / "inside").mkdir(parents=True)
            else:
                path.write_bytes(content)
    out = _run(tmp_path, env, CALL_MANY)
    assert out.returncode == 0 and out.stdout.split() == right, out.stderr
    notes = _notes(out)
    assert len(notes) == len(DAMAGES), out.stderr
    for k, damage in enumerate(DAMAGES):
        assert sum(f"numba's cache of h{k} was damaged" in n for n in notes) == 1, damage
    assert "Traceback" not in out.stderr
    again = _run(tmp_path, env, CALL_MANY)  # rebuilt: the next run loads without a word
    assert again.stdout.split() == right and "CompileNotice" not in again.stderr


SHARED = '''
import numpy as np
from market.compiled.jit import njit


@njit(cache=True)
def g(x):
    return x * 2.0, np.zeros(2, dtype=np.int64)  # two dtypes: its wrapper reads two constants


@njit(cache=True)
def caller(x):
    a, b = g(x)
    return a.sum() + b.sum()
'''


@pytest.mark.slow
def test_a_function_cached_alone_and_inside_another_plays_in_every_later_process(tmp_path):
    """A function compiled alone in a process that first loaded another function's cached
    library holding it (the market engine holds the ledger's ``group_means``) must stay
    callable in every later process (numba names environments by a per-process counter:
    a fresh clone once failed every call of ``group_means`` with ``SystemError``)."""
    env = _env(tmp_path)
    x = (f"import numpy as np\nfrom market.compiled import build\n"
         f"shared = build.module('shared', {SHARED!r})\nx = np.ones(3)\n")
    first = _run(tmp_path, env, x + "print(shared.g(x)[0].sum(), shared.caller(x))")
    assert first.stdout.split() == ["6.0", "6.0"], first.stderr
    for path in (tmp_path / "cache").rglob("shared_*.g-*"):
        path.unlink()  # g alone compiles again, after its caller's library is loaded
    for _ in range(2):
        out = _run(tmp_path, env, x + "print(shared.caller(x), shared.g(x)[0].sum())")
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


@pytest.mark.slow
def test_an_edit_to_a_record_type_a_compiled_function_builds_is_compiled_anew(tmp_path):
    """A compiled function that builds a record from a tuple (the market step makes the
    game's ``Pressure`` so) compiles in the order of its fields; reordered in their own file,
    the next run reads them in the new order."""
    (tmp_path / "makes.py").write_text(MAKES)
    env = _env(tmp_path, tmp_path)
    seen = []
    for fields in ("x: float\n    y: float", "y: float\n    x: float", "x: float\n    y: float"):
        (tmp_path / "record.py").write_text(RECORD.format(fields=fields))
        out = _run(tmp_path, env, "import makes; print(makes.first((1.0, 2.0)))")
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split()[-1])
    assert seen == ["1.0", "2.0", "1.0"]


BUILD = """
from market.compiled import build
text = ("from market.compiled.jit import njit\\n\\n\\n@njit(cache=True)\\n"
        "def f(x):\\n    return x + 1\\n")
module = build.module("probe", text)
heard = []
build.build(module, {"f": lambda: module.f(1)}, lambda: heard.append(1))
build.build(module, {"f": lambda: module.f(1)}, lambda: heard.append(1))  # built: silent
print(len(heard), sum(module.f.stats.cache_misses.values()))
"""


@pytest.mark.slow
def test_a_build_is_announced_the_first_time_only(tmp_path):
    """The compile notice is said by the build that compiles, and never again after."""
    env = _env(tmp_path)
    runs = [_run(tmp_path, env, BUILD) for _ in range(2)]
    assert [r.stdout.split() for r in runs] == [["1", "1"], ["0", "0"]], runs[0].stderr


# --- generated modules and the build's folder ----------------------------------------------------
def test_a_module_is_written_once_per_digest_in_the_builds_folder():
    text = "VALUE = 41 + 1\n"
    first = build.module("probe", text)
    second = build.module("probe", text)
    other = build.module("probe", "VALUE = 7\n")
    assert first.VALUE == second.VALUE == 42 and other.VALUE == 7
    assert first.__name__ == second.__name__ != other.__name__
    assert Path(first.__file__).parent == build.folder() / "modules"


def test_the_functions_a_module_binds_name_it(tmp_path):
    """Two generated modules of one text binding different functions (Kaplan and the
    Hardliner share a target, not an accept rule) are two files, never one's machine code
    for the other."""
    text = "F = _BOUND['f']\n"
    one = build.module("probe", text, {"f": build.root})
    two = build.module("probe", text, {"f": build.folder})
    assert one.__name__ != two.__name__ and one.F is build.root and two.F is build.folder


@pytest.mark.parametrize("damage", ["garbage", "cut short", "empty", "a folder"])
def test_a_damaged_generated_module_is_written_anew_with_one_notice(damage):
    text = f"VALUE = 41 + 1\nNAME = 'probe {damage}'\n"
    path = Path(build.module("probe", text).__file__)
    path.unlink()
    if damage == "a folder":
        (path / "inside").mkdir(parents=True)
    else:
        path.write_text({"garbage": "VALUE = (\n", "cut short": text[:10], "empty": ""}[damage])
    with pytest.warns(internals.CompileNotice, match="was damaged; written anew"):
        again = build.module("probe", text)
    assert again.VALUE == 42 and path.read_text() == text


def test_build_folders_unused_for_long_are_pruned_and_nothing_else(tmp_path):
    now = time.time()
    for name, age in (("0123456789abcdef", 30), ("fedcba9876543210", 1)):
        (tmp_path / name).mkdir()
        marker = tmp_path / name / build.MARKER
        marker.touch()
        os.utime(marker, (now - age * 86400,) * 2)
    (tmp_path / "aaaaaaaaaaaaaaaa").mkdir()  # named like one, but not ours: no marker
    (tmp_path / "my_notes.py").write_text("")  # a user's file
    assert build.prune(tmp_path, now) == ["0123456789abcdef"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "aaaaaaaaaaaaaaaa", "fedcba9876543210", "my_notes.py"]


@pytest.mark.parametrize("case", ["others may write", "a link", "a file", "under an open folder"])
def test_a_folder_that_cannot_be_trusted_is_refused_and_left_as_it_is(case, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    path = tmp_path / "cache"
    if case == "others may write":
        path.mkdir()
        path.chmod(0o777)
    elif case == "a link":
        path.symlink_to(target)
    elif case == "a file":
        path.write_text("")
    else:  # another user could rename it and put a folder of theirs in its place
        (tmp_path / "open").mkdir()
        (tmp_path / "open").chmod(0o777)
        path = tmp_path / "open" / "cache"
    assert build.untrusted(path)
    if case == "others may write":
        assert path.stat().st_mode & 0o777 == 0o777  # never chmod-ed
    if case == "under an open folder":
        assert not path.exists()  # nothing made there
        (tmp_path / "open").chmod(0o1777)  # sticky, as /tmp: nobody renames another's
        assert build.untrusted(path) == ""
    assert build.untrusted(tmp_path / "fresh") == ""
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o700


PROBE = '''
import warnings
warnings.simplefilter("always")
from market.compiled import build
text = ("from market.compiled.jit import njit\\n\\n\\n@njit(cache=True)\\n"
        "def f(x):\\n    return x + 1\\n")
print(build.module("probe", text).f(1), build.folder())
'''


class _Planted:
    """A pickle that, when numba unpickles it, leaves a marker file (a planted payload)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (Path.touch, (self.marker,))


@pytest.mark.slow
@pytest.mark.skipif(os.getuid() != 0, reason="planting a folder of another user needs root")
def test_a_cache_folder_another_user_can_write_is_never_loaded(tmp_path):
    """The fallback folder in $TMPDIR, made by another user with mode 777 and holding a
    planted numba index for the very module a run needs: the run compiles in memory with one
    note, and the payload never runs."""
    good = tmp_path / "good"
    first = _run(tmp_path, _env(tmp_path, NEGOTIATION_MARKET_CACHE=str(good)), PROBE)
    assert first.returncode == 0 and first.stdout.split()[0] == "2", first.stderr
    tmpdir = tmp_path / "tmp"
    planted = tmpdir / f"negotiation-market-{os.getuid()}"
    shutil.copytree(good, planted)
    marker = tmp_path / "payload-ran"
    indexes = list(planted.rglob("*.nbi"))
    assert indexes, "the first run cached the module where the planted copy sits"
    for index in indexes:
        index.write_bytes(pickle.dumps(_Planted(marker)))
    for path in [planted, *planted.rglob("*")]:
        os.chown(path, 12345, 12345)
        path.chmod(0o777)
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # NEGOTIATION_MARKET_CACHE under a file: it cannot be made
    out = _run(tmp_path, _env(tmp_path, NEGOTIATION_MARKET_CACHE=str(blocked / "cache"),
                              TMPDIR=str(tmpdir)), PROBE)
    assert out.returncode == 0 and out.stdout.split()[0] == "2", out.stderr
    assert not marker.exists(), "a planted pickle was loaded"
    assert not Path(out.stdout.split()[1]).is_relative_to(planted)
    notes = _notes(out)
    assert len(notes) == 1 and "owned by another user" in notes[0], out.stderr
    assert "compiling in memory" in notes[0]


@pytest.mark.parametrize("case", ["a link", "a pipe", "writable by others", "another user's"])
def test_a_folder_holding_what_another_could_have_put_there_is_refused(case, tmp_path):
    """What a build folder holds is loaded as code: every entry, at any depth, must be a plain
    file or folder of this user's that nobody else may write."""
    inner = tmp_path / "build" / "numba" / "deep"
    inner.mkdir(parents=True, mode=0o700)
    (inner / "f.nbi").write_bytes(b"")
    assert build.foreign(tmp_path / "build") == ""
    bad = inner / "g.nbi"
    if case == "a link":
        bad.symlink_to(inner / "f.nbi")
    elif case == "a pipe":  # read as an index it would hang the run
        os.mkfifo(bad)
    else:
        bad.write_bytes(b"")
        if case == "writable by others":
            bad.chmod(0o666)
        elif os.getuid() == 0:
            os.chown(bad, 12345, 12345)
        else:
            pytest.skip("a file of another user needs root")
    assert str(bad) in build.foreign(tmp_path / "build")


@pytest.mark.slow
def test_under_a_shared_groups_umask_the_cache_is_private_and_used_again(tmp_path):
    """umask 002 (a shared group) made numba's folders and files group-writable; what the
    project writes is this user's alone, so the next run loads it without a note."""
    env = _env(tmp_path)
    umask = f"import os; os.umask(0o002); exec({PROBE!r})"
    first, second = (_run(tmp_path, env, umask) for _ in range(2))
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert _notes(second) == [] and second.stdout.split()[1] == first.stdout.split()[1]
    made = [p for p in (tmp_path / "cache").rglob("*")]
    assert any(p.suffix == ".nbi" for p in made)
    assert [p for p in made if p.lstat().st_mode & 0o077] == []


@pytest.mark.slow
@pytest.mark.skipif(os.getuid() != 0, reason="planting a file of another user needs root")
def test_a_file_planted_in_the_users_own_cache_is_never_loaded(tmp_path):
    """The user's own closed cache folder, holding an index another user planted while it
    was open to a group: the run caches elsewhere, with one note; the payload never runs."""
    env = _env(tmp_path)
    assert _run(tmp_path, env, PROBE).returncode == 0
    marker = tmp_path / "payload-ran"
    indexes = list((tmp_path / "cache").rglob("*.nbi"))
    assert indexes
    for index in indexes:
        index.write_bytes(pickle.dumps(_Planted(marker)))
        os.chown(index, 12345, 12345)
    out = _run(tmp_path, {**env, "TMPDIR": str(tmp_path / "no-fallback")}, PROBE)
    assert out.returncode == 0 and out.stdout.split()[0] == "2", out.stderr
    assert not marker.exists(), "a planted pickle was loaded"
    notes = _notes(out)
    assert notes and "owned by another user" in notes[0], out.stderr


def test_an_untested_numba_release_is_one_line_naming_the_supported_range(monkeypatch):
    monkeypatch.setattr(internals.numba, "__version__", "0.99.0")
    note = internals.version_note()
    assert "numba 0.99.0" in note and internals.supported_words() in note and "\n" not in note
    monkeypatch.setattr(internals.numba, "__version__", "0.68.1")
    assert internals.version_note() == ""


def test_numbas_internals_are_used_in_one_module_only():
    """Everything but :mod:`market.compiled.internals` compiles through numba's public API."""
    private = ("numba.core", "numba.np", "numba.misc", "numba.typed", "llvmlite", "._cache",
               "_py_func", "numba.config.CACHE_DIR")
    found = [f"{path.relative_to(ROOT)}: {word}"
             for folder in ("market", "strategies") for path in (ROOT / folder).rglob("*.py")
             if path.name != "internals.py"
             for word in private if word in path.read_text()]
    assert found == []


def test_the_compiled_game_runs_on_the_signature_its_warm_up_compiled():
    """A first mover given as one number reached numba as a read-only broadcast view, a type
    of its own: the whole loop compiled a second time, silently, after the compile notice
    (a cold tournament sat 20 s at "pairings: 0 of 100")."""
    import numpy as np

    import strategies
    from market import compiled_game
    from market.game.protocol import Side
    from market.game.rules import Protocol

    p = Protocol(5, 3)
    pair = [strategies.make("averaging", side, 1, p) for side in ("seller", "buyer")]
    compiled_game.negotiate(p, Side.single(pair[0], 4, 1, 5), Side.single(pair[1], 4, 1, 5), 0,
                      np.random.default_rng(0))
    module = compiled_game.compiled_module(pair)
    assert module.negotiate_rows.signatures, "compiled"
    assert all("readonly" not in str(t) for sig in module.negotiate_rows.signatures
               for t in sig), module.negotiate_rows.signatures


RACE = '''
import sys, time
import numpy as np
from market.compiled import build
text = ("from market.compiled.jit import njit\\n\\n\\n@njit(cache=True)\\n"
        "def f(x):\\n    return x + x\\n")
from numba.core.caching import IndexDataCacheFile

save_index, save_data = IndexDataCacheFile._save_index, IndexDataCacheFile._save_data
kind = sys.argv[1]


def slow_index(self, overloads):  # a slow disk: reading the index and writing it apart
    time.sleep(1.5)
    save_index(self, overloads)


def slow_data(self, name, data):  # ... and the int's machine code written last of all
    time.sleep(3.0 if kind == "int" else 0.0)
    save_data(self, name, data)


IndexDataCacheFile._save_index, IndexDataCacheFile._save_data = slow_index, slow_data
value = {"int": 3, "float": 1.5, "complex": 2j, "array": np.arange(3.0)}
module = build.module("race", text)
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # every process compiles at once
print(repr(module.f(value[kind]) if kind != "all" else
           [module.f(v).tolist() if kind == "array" else module.f(v)
            for kind, v in value.items()]))
'''


@pytest.mark.slow
def test_processes_caching_one_function_at_once_never_load_each_others_code(tmp_path):
    """numba numbers a new signature's cache file from the index it read, unlocked: four
    processes compiling four signatures of one function at once could share a number, and a
    later process ran one signature's machine code for another (SIGSEGV under pytest -n 2).
    Saves and loads hold a lock on the index: every signature loads as itself."""
    for attempt in range(2):  # on a slow disk (sleeps inside numba's save)
        env = _env(tmp_path, NEGOTIATION_MARKET_CACHE=str(tmp_path / f"cache{attempt}"))
        start = str(time.time() + 4.0)
        procs = [subprocess.Popen([sys.executable, "-c", RACE, kind, start], cwd=tmp_path,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
                 for kind in ("int", "float", "complex", "array")]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        later = _run(tmp_path, env, RACE, None, "all", "0")
        assert later.returncode == 0, later.stderr
        assert later.stdout.strip() == "[6, 3.0, 4j, [0.0, 2.0, 4.0]]", later.stdout


_CALLBACK_CTRL_C = """
import ctypes, os, signal, sys, types
from market.compiled import build

def inside_numba_s_code_cache():  # a callback from C, as numba's code cache makes
    os.kill(os.getpid(), signal.SIGINT)
    sum(range(100_000))  # Python's handler runs here, inside the callback

callback = ctypes.CFUNCTYPE(None)(inside_numba_s_code_cache)
try:
    build.build(types.ModuleType("a_compile"), {"entry": lambda: callback()})
except KeyboardInterrupt:
    print("raised")
else:
    print("lost")
"""


def test_a_ctrl_c_during_a_compile_is_raised_when_it_returns_not_lost_in_a_callback(tmp_path):
    """numba's code cache calls back into Python from C, where a ``KeyboardInterrupt`` is
    printed as ignored: a Ctrl-C in a cold compile's last second was lost (the command went
    on and exited 0, 4 trials in 36). Held until the compile returns, it is raised then."""
    out = subprocess.run([sys.executable, "-c", _CALLBACK_CTRL_C], capture_output=True,
                         text=True, env={**os.environ, "NEGOTIATION_MARKET_CACHE": str(tmp_path)},
                         timeout=120)
    assert out.stdout.split() == ["raised"], (out.stdout, out.stderr[-2000:])
    assert "Exception ignored" not in out.stderr
