"""``run.py viz``: a bad port is one line and exit 2. (That the server ends with the command
is tests/test_processes.py's; the served pages are tests/view/test_browser.py's.)"""

from __future__ import annotations

import socket

import pytest

from market.cli import main


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
