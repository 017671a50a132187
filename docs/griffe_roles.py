"""A Griffe extension: the docstrings' Sphinx cross-references become the site's links.

The code's docstrings use Sphinx's roles (``:class:`~market.sim.model.MarketModel```,
``:meth:`act```, ``:mod:`strategies.base```), which Python's own tools and
editors read; mkdocstrings would print them as raw text. While the API
reference loads the code, this extension rewrites each role into the
cross-reference syntax mkdocstrings renders (``[`MarketModel`][market.sim.model.MarketModel]``),
resolving a short name the way Sphinx does: a member of the object itself,
of its class, of its module (imports included), then an absolute path. A
target the reference does not show (a constant or method without a
docstring, a private name) links to the nearest object that it shows. A name
that resolves nowhere is left as a cross-reference to itself, so the strict
build fails on it instead of printing a dead link or raw text.

The code documents its constants with ``#:`` comments (Sphinx's attribute
comments); this extension reads them as the constants' docstrings, so the
reference shows them too.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|const|property):"
                  r"`(?P<tilde>~?)(?P<target>[^`<>]+?)`")


def _lookup(obj: Any, dotted: str) -> Any:
    """The object at ``dotted`` below ``obj`` (members, then aliases' targets), or None."""
    current = obj
    for part in dotted.split("."):
        try:
            members = current.members
        except Exception:  # noqa: BLE001 - an alias that cannot resolve
            return None
        if part not in members:
            return None
        current = members[part]
    return current


def _shown(obj: Any) -> bool:
    """Whether the reference renders ``obj``: public, with a docstring (the site's options)."""
    return not obj.name.startswith("_") and bool(obj.docstring and obj.docstring.value.strip())


def _shown_path(found: Any) -> str:
    """The path of ``found``, or of its nearest ancestor the reference renders."""
    try:
        target = found.final_target if found.is_alias else found
    except Exception:  # noqa: BLE001 - an alias to a package not loaded (yet): trust its path
        return found.target_path
    here = target
    while here is not None and here.parent is not None and not (
            _shown(here) or here.is_module):
        here = here.parent
    return (here or target).path


def resolve(obj: Any, name: str) -> str | None:
    """The full path ``name`` means in the docstring of ``obj``, or None."""
    name = name.strip().rstrip("()")
    scopes = []
    here = obj
    while here is not None:
        scopes.append(here)
        here = here.parent
    for scope in scopes:  # the object, its class, its module, its packages
        found = _lookup(scope, name)
        if found is not None:
            return _shown_path(found)
        head, _, rest = name.partition(".")
        alias = scope.members.get(head) if rest else None
        if alias is not None and alias.is_alias:  # an import whose package is not loaded yet
            try:
                alias.final_target  # noqa: B018 - loaded: _lookup would have found it
            except Exception:  # noqa: BLE001
                return f"{alias.target_path}.{rest}"
    modules = getattr(scopes[-1], "modules_collection", None)
    if modules is not None:
        top, _, rest = name.partition(".")
        if top in modules.members:
            found = modules.members[top] if not rest else _lookup(modules.members[top], rest)
            if found is not None:
                return _shown_path(found)
    return None


def comment_docstrings(obj: Any) -> None:
    """The ``#:`` comment lines just above each attribute of ``obj``'s module or class, as
    that attribute's docstring (where it has none)."""
    for member in obj.members.values():
        if member.is_alias or not member.is_attribute or member.docstring is not None:
            continue
        try:
            lines = member.lines_collection[member.filepath]
        except Exception:  # noqa: BLE001 - no source at hand
            continue
        i = (member.lineno or 1) - 2  # the line above (0-based)
        said = []
        while i >= 0 and lines[i].strip().startswith("#:"):
            said.append(lines[i].strip()[2:].strip())
            i -= 1
        if said:
            member.docstring = griffe.Docstring(" ".join(reversed(said)), parent=member)


def convert(text: str, obj: Any) -> str:
    """``text`` with every Sphinx role replaced by a cross-reference (resolved for ``obj``)."""

    def one(m: re.Match[str]) -> str:
        target = m.group("target").strip()
        shown = target.rsplit(".", 1)[-1] if m.group("tilde") else target
        path = resolve(obj, target) or target
        return f"[`{shown}`][{path}]"

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the Sphinx roles of every loaded docstring into cross-references."""

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        del kwargs
        self._comments(pkg, set())
        self._walk(pkg, set())

    def _comments(self, obj: Any, seen: set[str]) -> None:
        if obj.path in seen or obj.is_alias:
            return
        seen.add(obj.path)
        if obj.is_module or obj.is_class:
            comment_docstrings(obj)
            for member in list(obj.members.values()):
                self._comments(member, seen)

    def _walk(self, obj: Any, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value, obj)
        for member in list(obj.members.values()):
            if not member.is_alias:
                self._walk(member, seen)
