"""What the view changes in Solara's server, in the server's own process, before any request.

Three things, each against something a web page in the user's browser (or,
off loopback, anyone on the network) could otherwise do with one request:

- assets are served read-only (:func:`market.view.assets.install_read_only_cdn`):
  Solara's asset lookup removes folders and writes downloads through the
  offline cache's links into the installed package;
- served beyond this machine (``run.py viz --host`` another address, which
  sets :data:`EXPOSED_ENV`), Solara's ``/resourcez`` statistics endpoint
  answers 404, and the two-agent page reads Q-tables only inside the folder
  the server was started in (:func:`readable_table`), so a visitor cannot
  probe the server's files;
- on loopback both stay as they are: the page is the user's own.

Checked against solara 1.58.2, whose app is ``solara.server.starlette.app``.
"""

from __future__ import annotations

import os
from pathlib import Path

from market.files import shown
from market.view.assets import install_read_only_cdn

#: set (to 1) by ``run.py viz`` when it serves an address other than loopback
EXPOSED_ENV = "NEGOTIATION_VIEW_EXPOSED"
#: Solara's endpoints that show the server's internals
DEBUG_PATHS = ("/resourcez",)


def exposed() -> bool:
    """Whether this server answers beyond this machine."""
    return os.environ.get(EXPOSED_ENV) == "1"


def harden() -> None:
    """Everything of the module docstring, for this server process."""
    install_read_only_cdn()
    if exposed():
        hide_debug_endpoints()


def hide_debug_endpoints() -> None:
    """Answer 404 at Solara's debug endpoints (their routes replaced, in place)."""
    import solara.server.starlette as starlette_server
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def not_found(request: object) -> PlainTextResponse:
        return PlainTextResponse("Not Found", status_code=404)

    routes = starlette_server.app.router.routes
    for i, route in enumerate(routes):
        if getattr(route, "path", None) in DEBUG_PATHS:
            routes[i] = Route(route.path, endpoint=not_found)


def readable_table(path: str) -> str:
    """``path`` as typed on the page, if the page may read it; ``ValueError`` otherwise.

    Off loopback, only files inside the working folder (after following
    links) may be read, and the message does not tell whether a file
    outside exists.
    """
    if not exposed():
        return path
    base = Path.cwd().resolve()
    full = (base / path).resolve()
    if full != base and base not in full.parents:
        raise ValueError(f"{shown(path)}: this page, served beyond this machine, reads "
                         f"Q-tables only inside its working folder {base}")
    return path


__all__ = ["DEBUG_PATHS", "EXPOSED_ENV", "exposed", "harden", "hide_debug_endpoints",
           "readable_table"]
