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

Served read-only: Solara's own lookup of a cached asset
(``solara.server.cdn_helper.get_path``) removes any cached path that is a
folder (``shutil.rmtree``, a clean-up of an old cache layout) and fetches
what is missing from the internet into the cache. Through the links above
the removal would land in the installed package: one
``GET /_solara/cdn/vega@5.21.0/build`` from any web page open in the
browser deleted the chart library. :func:`install_read_only_cdn` replaces
that lookup in the server process with :func:`read_only_path`: a regular
file inside the cache folder is served, anything else (a folder, a missing
file, a path that leaves the folder) is a 404; nothing is removed, written
or fetched.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path, PurePosixPath

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


def read_only_path(base: Path, path: str) -> Path:
    """The cached file that ``GET /_solara/cdn/PATH`` serves; ``FileNotFoundError`` (a 404)
    for anything that is not a regular file inside ``base``, which it never changes.

    A bare ``NAME@VERSION`` means its main script (``NAME@VERSION/__main.js``), as in
    Solara. Parts that are empty, ``.`` or ``..`` are refused before any file is looked at.
    """
    parts = PurePosixPath(str(path).replace("\\", "/")).parts
    if not parts or any(p in ("", ".", "..", "/") for p in parts):
        raise FileNotFoundError(path)
    full = base.joinpath(*parts) if len(parts) > 1 else base / parts[0] / "__main.js"
    if os.path.commonpath([os.path.normpath(full), os.path.normpath(base)]) != os.path.normpath(
            base) or not full.is_file():
        raise FileNotFoundError(path)
    return full


def install_read_only_cdn() -> None:
    """Make this server process look up CDN assets with :func:`read_only_path` only.

    Solara's CDN route (``StaticCdn.lookup_path`` in ``solara.server.starlette``) calls
    the module-level name ``get_path``; checked against solara 1.58.2. Both that name and
    ``cdn_helper``'s own are replaced, so no code path of the server can delete, write
    or fetch a cached asset.
    """
    import solara.server.cdn_helper as cdn_helper
    import solara.server.starlette as starlette_server

    def get_path(base_cache_dir: Path, path: str) -> Path:
        return read_only_path(Path(base_cache_dir), path)

    def get_data(base_cache_dir: Path, path: str) -> bytes:
        return read_only_path(Path(base_cache_dir), path).read_bytes()

    cdn_helper.get_path = get_path
    cdn_helper.get_data = get_data
    starlette_server.get_path = get_path


__all__ = ["install_read_only_cdn", "installed_cdn", "major_aliases", "offline_cdn",
           "read_only_path"]
