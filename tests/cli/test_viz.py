"""``run.py viz``: bad ports are one line and exit 2; the server never outlives the command.

The process tests run the real command with a stand-in server (Python's
``http.server``, which starts in a blink) in place of Solara, so they check the
command's own handling: SIGTERM stops the server like Ctrl-C, and on Linux
the server also ends when the command is killed outright.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from market.cli import main

ROOT = Path(__file__).resolve().parents[2]

STAND_IN = """
import argparse, sys
from market.cli import viz_cmd
viz_cmd.server_command = lambda host, port: [
    sys.executable, "-m", "http.server", str(port), "--bind", host]
args = argparse.Namespace(host="127.0.0.1", port={port}, page="market", json=True)
sys.exit(viz_cmd.run(args))
"""


@pytest.mark.parametrize("port", ["80", "1023", "65536", "http"])
def test_viz_port_out_of_range_is_one_line_exit_2(port, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["viz", "--port", port])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--port must be an integer in [1024, 65535]" in err[0]


def test_viz_port_in_use_is_one_line_exit_2(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        if port < 1024:
            pytest.skip("the OS handed out a privileged port")
        assert main(["viz", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--port {port}" in err[0] and "not available" in err[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _start() -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", STAND_IN.format(port=port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    text = b""
    try:
        while True:  # the JSON summary, once the server answers (raw reads: no buffering)
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, f"run.py viz printed nothing more than {text!r}"
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"run.py viz ended after printing {text!r}"
            text += chunk
            try:
                server = json.loads(text)["pid"]
                break
            except json.JSONDecodeError:
                continue
    except BaseException:
        proc.kill()  # its server then ends too (SIGTERM from the parent's death, on Linux)
        proc.wait()
        raise
    assert _alive(server)
    return proc, server


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_the_server_like_ctrl_c():
    proc, server = _start()
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert _wait_gone(server)
    finally:
        for pid in (server, proc.pid):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.stdout.close()


@pytest.mark.skipif(sys.platform != "linux", reason="the parent-death signal is Linux's")
def test_the_server_ends_when_the_command_is_killed_outright():
    proc, server = _start()
    try:
        proc.kill()  # SIGKILL: no handler runs in the command
        proc.wait(timeout=10)
        assert _wait_gone(server)
    finally:
        if _alive(server):
            os.kill(server, signal.SIGKILL)
        proc.stdout.close()
