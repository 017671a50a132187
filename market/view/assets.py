"""Offline JavaScript for the browser view: Solara's asset cache, under the names widgets ask for.

Solara serves JavaScript libraries at ``/_solara/cdn/NAME@VERSION/...`` from a
local cache (filled by the ``solara-assets`` package) and fetches what is
missing from a public CDN. Its chart widget (``solara.FigureAltair``, which
Mesa's Altair components use) asks for ``vega@5``, ``vega-lite@5`` and
``vega-embed@6`` by major version, while the cache holds exact versions
(``vega@5.21.0``): without internet the charts would stay blank. The view's
server therefore gets a cache of its own: a folder of links to every
installed asset plus one ``NAME@MAJOR`` link per library, to its newest
installed version. Nothing is copied or downloaded.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

#: ``name@1.2.3`` (a scoped name like ``@widgetti/x`` has no version in its folder name)
_VERSIONED = re.compile(r"^(?P<name>[^@/]+)@(?P<version>\d+(?:\.\d+)*)$")


def installed_cdn() -> Path:
    """Solara's asset cache: its default, or ``SOLARA_ASSETS_PROXY_CACHE_DIR`` if set."""
    env = os.environ.get("SOLARA_ASSETS_PROXY_CACHE_DIR")
    return Path(env) if env else Path(sys.prefix) / "share" / "solara" / "cdn"


def major_aliases(names: list[str]) -> dict[str, str]:
    """``{"vega@5": "vega@5.21.0", ...}``: each library's newest version under its major."""
    best: dict[str, tuple[tuple[int, ...], str]] = {}
    for n in names:
        m = _VERSIONED.match(n)
        if not m:
            continue
        version = tuple(int(x) for x in m["version"].split("."))
        alias = f"{m['name']}@{version[0]}"
        if alias not in best or version > best[alias][0]:
            best[alias] = (version, n)
    return {alias: n for alias, (_, n) in best.items() if alias not in names}


def offline_cdn(target: Path, source: Path | None = None) -> Path:
    """Fill ``target`` with links to every asset of ``source`` plus the major-version aliases.

    Returns ``target``, to pass to the server as ``SOLARA_ASSETS_PROXY_CACHE_DIR``.
    """
    source = source or installed_cdn()
    target.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in source.iterdir()) if source.is_dir() else []
    links = {n: n for n in names}
    links.update(major_aliases(names))
    for link, real in links.items():
        path = target / link
        if not path.exists():
            path.symlink_to(source / real, target_is_directory=(source / real).is_dir())
    return target


__all__ = ["installed_cdn", "major_aliases", "offline_cdn"]
