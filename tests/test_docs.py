"""The documentation: a README that starts fast, and a site that builds without a broken link.

The site (MkDocs, ``docs/mkdocs.yml``) is built strictly: a page, link,
anchor or image that does not resolve, or an API entry that names no
module, fails the build. Every module of the project has its entry in the
API reference, so a new module cannot be left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"


def test_the_site_builds_strictly(tmp_path):
    """The README's documented build (``mkdocs build --strict -f docs/mkdocs.yml``), with its
    output read: no warning (a cross-reference that finds no target) and no raw role or
    unresolved reference on any page. ``-q`` would hide the warnings: not used."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          str(DOCS / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    said = out.stdout + out.stderr
    assert "WARNING" not in said and "Aborted" not in said, said[-3000:]
    api = (tmp_path / "site" / "api" / "game" / "index.html").read_text()
    assert "market.game.rules.Protocol" in api  # the reference is generated, not empty
    raw = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj):`?\w")
    for page in (tmp_path / "site" / "api").rglob("*.html"):  # roles are links, never text
        text = page.read_text()
        assert not raw.search(text), page
        assert "][]" not in text, page  # an autorefs link that found no target
    sim = (tmp_path / "site" / "api" / "sim" / "index.html").read_text()
    assert 'href="#market.sim.params.check"' in sim  # a role in a docstring, now a link
    assert (tmp_path / "site" / "report" / "report" / "index.html").exists()


def _modules() -> set[str]:
    found = set()
    for top in ("market", "strategies"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if not any(p.startswith("_") for p in parts[1:]) and parts != ("market",):
                found.add(".".join(parts))
    return found


def test_every_module_has_its_api_entry():
    listed = set()
    for page in (PAGES / "api").glob("*.md"):
        listed |= set(re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M))
    assert _modules() - listed == set(), "modules missing from docs/pages/api/"
    assert listed - _modules() == set(), "API entries for modules that do not exist"


def test_every_page_is_in_the_navigation():
    config = (DOCS / "mkdocs.yml").read_text()
    for page in PAGES.rglob("*.md"):
        rel = page.relative_to(PAGES).as_posix()
        assert f": {rel}" in config, f"{rel} is not in docs/mkdocs.yml's nav"


def test_the_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    for target in re.findall(r"\]\(((?!https?:)[^)#\s]+)", text):
        assert (ROOT / target).exists(), f"README links to a missing {target}"


def test_sphinx_roles_resolve_as_sphinx_would_and_unknown_ones_stay_broken():
    """docs/griffe_roles.py: a short name resolves in the docstring's scope; a name that
    resolves nowhere is left as a reference to itself, which the strict build refuses."""
    griffe = pytest.importorskip("griffe")
    sys.path.insert(0, str(DOCS))
    try:
        import griffe_roles
    finally:
        sys.path.remove(str(DOCS))
    market = griffe.load("market", search_paths=[str(ROOT)])
    model = market["sim.model.MarketModel"]
    assert griffe_roles.convert(":meth:`step`", model) == (
        "[`step`][market.sim.model.MarketModel.step]")
    assert griffe_roles.convert(":class:`~market.sim.engine.CompiledEngine`", model) == (
        "[`CompiledEngine`][market.sim.engine.CompiledEngine]")
    assert griffe_roles.convert(":data:`~market.sim.params.Params`", model) == (
        "[`Params`][market.sim.params.Params]")  # a class in the source: its own entry
    assert griffe_roles.convert(":mod:`~market.sim.revision`", model) == (
        "[`revision`][market.sim.revision]")
    assert griffe_roles.convert(":func:`no_such_thing`", model) == (
        "[`no_such_thing`][no_such_thing]")
