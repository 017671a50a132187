"""The house keeps its layers: no import runs up a layer, no two modules import each other.

Every import of every module counts, at the top or inside a function, under
``TYPE_CHECKING`` or not: a lower layer that reached up, even lazily, would
tie the game to the market or the market to the command line.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package prefix -> layer (bottom 1 to top 7): the one table of the layers (the drawing in
#: docs/pages/architecture.md is checked against it below)
LAYERS = {
    "market.errors": 1, "market.limits": 1, "market.files": 1, "market.processes": 1,
    "market.jsonable": 1, "market.parameters": 1,
    "market.game": 2, "market.compiled": 2,
    "strategies": 3, "market.compiled_game": 3,
    "market.sim": 4, "market.interop": 4,
    "market.plots": 5,
    "market.runs": 6, "market.view": 6, "market.report": 6,
    "market.bench": 7, "market.cli": 7,
}


def modules() -> dict[str, Path]:
    out = {}
    for top in ("market", "strategies"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = modules()


def layer(module: str) -> int | None:
    matches = [(len(p), n) for p, n in LAYERS.items() if module == p or module.startswith(p + ".")]
    return max(matches)[1] if matches else None


def imports(name: str, source: str | None = None) -> set[str]:
    """The project modules ``name`` imports (``from a import b`` counts ``a.b`` if a module)."""
    tree = ast.parse(MODULES[name].read_text() if source is None else source)
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m != "market" and layer(m) is None] == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_runs_up_a_layer(name):
    mine = layer(name)
    if mine is None:
        return
    up = sorted(t for t in GRAPH[name] if (layer(t) or 0) > mine)
    assert up == [], f"{name} (layer {mine}) imports higher layers: {up}"


def test_no_two_modules_import_each_other():
    """No circle of any length among the project's modules (packages' __init__ excepted,
    which re-export what their modules define)."""
    graph = {m: {t for t in ts if MODULES[t].name != "__init__.py"}
             for m, ts in GRAPH.items() if MODULES[m].name != "__init__.py"}
    seen: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        seen[m] = 1
        path.append(m)
        for t in sorted(graph.get(m, ())):
            if seen.get(t) == 1:
                cycle = path[path.index(t):] + [t]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if t not in seen:
                visit(t)
        path.pop()
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m)


def test_the_checker_sees_lazy_relative_and_type_checking_imports():
    """The checks can fail: imports hidden in a function, relative or for typing are seen."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from market.sim.model import MarketModel\n"
              "def f():\n    from ..cli import common\n    import strategies.specs\n")
    found = imports("market.game.protocol", source)
    assert found == {"market.sim.model", "market.cli", "market.cli.common", "strategies.specs"}
    assert all(layer(t) > layer("market.game.protocol") for t in found)


def test_the_architecture_page_draws_this_table():
    """docs/pages/architecture.md draws the layers for readers; it must say what this test
    enforces (a package on the wrong floor, or missing, fails)."""
    page = (ROOT / "docs" / "pages" / "architecture.md").read_text()
    drawing = page.split("```")[1]
    drawn: dict[str, int] = {}
    floor = 0
    for line in drawing.splitlines():
        if line[:3].strip().isdigit():
            floor = int(line[:3])
        for path in re.findall(r"(market/\w+(?:\.py|/)|strategies/)", line):
            drawn[path.rstrip("/").removesuffix(".py").replace("/", ".")] = floor
    assert drawn == LAYERS


def test_the_compiled_two_agent_game_needs_no_market():
    """The game's compiled play (the negotiation loops, the environments' step, their
    compile entry point) sits below the market: playing a compiled negotiation, and loading
    the tournament and the vector environment, imports neither ``market.sim`` nor Mesa. The
    report's game sections play through it too, not through the market."""
    for name in ("market.compiled_game", "market.game.loops", "market.game.fastgame",
                 "market.game.moves"):
        assert (layer(name) or 9) <= 3, name
        assert not [t for t in GRAPH[name] if t.startswith("market.sim")], name
    for name in ("market.runs.tournament", "market.report.sizes", "market.interop.vector_env"):
        assert not [t for t in GRAPH[name] if t.startswith("market.sim")], name
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import market.interop.vector_env, market.runs.tournament
        from market import compiled_game
        from market.game.protocol import Side
        from market.game.rules import Protocol
        from strategies import specs
        pr = Protocol(5, 5, 0.9, 0.9, 0.1, 0.01, 0.02)
        s, b = specs.build("boulware", 0, pr), specs.build("averaging", 1, pr)
        rec = compiled_game.negotiate(pr, Side.single(s, 4, 1, 5), Side.single(b, 4, 1, 5), 0,
                                np.random.default_rng(0))
        assert rec.n_moves.min() >= 1
        print(sorted(m for m in sys.modules if m.split(".")[0] == "mesa"
                     or m.startswith("market.sim")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


#: a compiled function takes at most this many parameters: more is a sign that a group of
#: them wants to be one record (as the game's time pressure is one Pressure)
COMPILED_PARAMS_MAX = 12


def test_no_compiled_function_takes_more_than_twelve_parameters():
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            decorated = [ast.unparse(d) for d in node.decorator_list]
            if not any("njit" in d for d in decorated):
                continue
            count = len(node.args.args) + len(node.args.kwonlyargs)
            found.append(name)
            assert count <= COMPILED_PARAMS_MAX, f"{name}.{node.name} takes {count}"
    assert "market.game.moves" in found and "market.game.loops" in found  # the scan sees them
