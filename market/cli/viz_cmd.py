"""Serve the browser view: the market page and the two-agent game (Solara, Mesa).

Runs ``solara run market.view.app`` on the given address and prints where to
point the browser once the server answers. Works with no internet: the
page's JavaScript comes from the installed ``solara-assets`` package (served
by this server, never from a CDN, under the names the chart widget asks for:
:mod:`market.view.assets`), and Solara's version check and usage
telemetry are switched off. Ctrl-C stops the server.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from market.cli import common
from market.cli.common import emit_json, int_in
from market.errors import UsageError
from market.processes import alive, deferred_signals, preexec_die_with_parent

HELP = "serve the market and the two-agent game in the browser (Solara, offline)"
#: the view's temporary folder: ``negotiation-viz-PID-XXXX`` in the system's temp folder,
#: with a marker file, so that a later run can tell its own stale folders from others'
TMP_PREFIX = "negotiation-viz-"
MARKER = "negotiation-viz.marker"


PAGES = {"market": "/", "two-agent": "/two-agent"}
#: seconds to wait for the server to answer before giving up
START_TIMEOUT = 120.0
ROOT = Path(__file__).resolve().parents[2]


def host_address(text: str) -> str:
    """argparse ``type=`` for ``--host``: a name or address, not empty."""
    host = text.strip()
    if not host:
        raise argparse.ArgumentTypeError(
            "--host must be an address (default 127.0.0.1; 0.0.0.0 for every interface)")
    return host


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", type=host_address, default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; another "
                        "address serves the page to the network, with a warning)")
    p.add_argument("--port", type=int_in("--port", 1024, 65535), default=8765,
                   help="TCP port in [1024, 65535] (default 8765)")
    p.add_argument("--page", choices=tuple(PAGES), default="market",
                   help="which page's address to print (both are served; default market)")


def server_command(host: str, port: int) -> list[str]:
    """The ``solara run`` command line: production mode, no browser, no network calls."""
    return [
        sys.executable, "-m", "solara", "run", "market.view.app",
        "--host", host, "--port", str(port),
        "--production", "--no-open", "--no-check-version",
        "--log-level", "warning",
    ]


def server_env(cdn: Path | None = None, exposed: bool = False) -> dict[str, str]:
    """The environment of the server: telemetry and Solara's corner badge off, this project
    importable, quiet warnings, and (``cdn``) the offline asset folder of
    :func:`market.view.assets.offline_cdn`."""
    env = dict(os.environ)
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"
    env["SOLARA_THEME_SHOW_BANNER"] = "false"  # "This website runs on Solara" covered the panels
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if cdn is not None:
        env["SOLARA_ASSETS_PROXY_CACHE_DIR"] = str(cdn)
    from market.view.server import EXPOSED_ENV

    env.pop(EXPOSED_ENV, None)
    if exposed:  # debug endpoint off, page paths confined (market.view.server)
        env[EXPOSED_ENV] = "1"
    # library warnings about hook style and http cookies say nothing to a user of the page
    env.setdefault("PYTHONWARNINGS", "ignore::UserWarning")
    return env


def check_port_free(host: str, port: int) -> None:
    """Fail early, in one line, when another program already listens on the port.

    The probe uses the address family of ``host`` (``::1`` is IPv6 loopback).
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} is not a known address ({exc.strerror})") from None
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            raise UsageError(
                f"--port {port} on {host} is not available ({exc.strerror}); choose another "
                "port in [1024, 65535]"
            ) from None


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = START_TIMEOUT) -> bool:
    """Poll ``url`` until the server answers; False if the server process died first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    return False


def stop(proc: subprocess.Popen) -> None:
    """Stop the server: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(args: argparse.Namespace) -> int:
    from market.view.assets import offline_cdn

    check_port_free(args.host, args.port)
    if importlib.util.find_spec("solara_assets") is None:
        print("warning: solara-assets is not installed; the page fetches its JavaScript from a "
              "CDN and stays blank without internet (pip install solara-assets)", file=sys.stderr)
    if not is_loopback(args.host):
        print(f"warning: serving on {args.host}: anyone who can reach this machine on port "
              f"{args.port} can use the page", file=sys.stderr)
    wildcard = args.host in ("0.0.0.0", "::")
    shown = "127.0.0.1" if wildcard else (f"[{args.host}]" if ":" in args.host else args.host)
    base = f"http://{shown}:{args.port}"
    url = base + PAGES[args.page]
    root = Path(tempfile.gettempdir())
    remove_stale_folders(root)
    tmp: Path | None = None
    try:
        # a signal that landed inside mkdtemp, once the folder was made but before it was
        # returned, left the folder behind (seen once in a fresh-clone run): held back till here
        with deferred_signals():
            tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=root))
        (tmp / MARKER).write_text("the browser view's asset links; removed when it stops\n")
        cdn = offline_cdn(tmp / "cdn")
        return _serve(args, base, url, cdn)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def remove_stale_folders(root: Path) -> list[Path]:
    """Remove the asset folders of earlier ``viz`` runs that ended without cleaning up
    (SIGKILL): only folders named ``negotiation-viz-PID-*`` holding this project's marker,
    owned by this user, whose process is gone. Returns the folders removed."""

    gone = []
    for folder in root.glob(f"{TMP_PREFIX}*"):
        try:
            pid = int(folder.name[len(TMP_PREFIX):].split("-", 1)[0])
            st = folder.lstat()
        except (ValueError, OSError):
            continue
        if (folder.is_symlink() or not folder.is_dir() or st.st_uid != os.getuid()
                or not (folder / MARKER).is_file() or alive(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    return gone


def _serve(args: argparse.Namespace, base: str, url: str, cdn: Path) -> int:

    # The server runs in the caller's folder, so a Q-table path typed on the two-agent
    # page is relative to where ``run.py viz`` was started (the page shows that folder).
    # Its own messages go to stderr so that stdout carries only the address (or JSON);
    # the kernel ends the server if this process is killed (Ctrl-C and SIGTERM stop it below)
    # its own session: a Ctrl-C at the terminal reaches only this command, which then stops
    # the server with SIGTERM (a SIGINT inside the server's request handlers printed pages
    # of tracebacks)
    proc: subprocess.Popen | None = None
    try:
        with deferred_signals():  # a signal now arrives once ``proc`` is known to finally
            proc = subprocess.Popen(server_command(args.host, args.port),
                                    env=server_env(cdn, exposed=not is_loopback(args.host)),
                                    stdout=sys.stderr, preexec_fn=preexec_die_with_parent,
                                    start_new_session=True)
        if not wait_until_up(base + "/", proc):
            code = proc.poll()
            print(f"{common.PROG} viz: error: the Solara server did not start on {base} (exit code "
                  f"{code}); see its messages above", file=sys.stderr)
            return 1
        if args.json:
            emit_json({"url": url, "pages": {k: base + v for k, v in PAGES.items()},
                       "pid": proc.pid})
        else:
            print(f"Market view:    {base}{PAGES['market']}")
            print(f"Two-agent game: {base}{PAGES['two-agent']}")
            print(f"Open {url} in a browser. Ctrl-C stops the server.", flush=True)
        sys.stdout.flush()
        proc.wait()
        return 0 if proc.returncode in (0, -2, 130) else 1
    except KeyboardInterrupt:  # how the view is stopped; 130, as every command's Ctrl-C
        if proc is not None:
            stop(proc)
        print("Solara server stopped.", file=sys.stderr)
        return 130
    finally:
        if proc is not None:
            stop(proc)
