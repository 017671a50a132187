"""The terminal view: readable outcome banners (WCAG AA) and ``q`` quits a ``--step`` replay."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from market.view import terminal
from market.view.pair_figures import banner_html
from market.view.two_agent import setup_game

ROOT = Path(__file__).resolve().parents[2]


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb`` or ``rgb(r,g,b)``."""
    if colour.startswith("#"):
        rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        rgb = [int(x) for x in re.findall(r"\d+", colour)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
           for c in (v / 255 for v in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_formula_on_known_pairs():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # just fails AA
    # the legacy banner: flashy green text on orange-red
    assert contrast("rgb(48,255,25)", "rgb(255,71,25)") < 3.0


@pytest.mark.parametrize("deal", [True, False])
def test_banners_reach_wcag_aa_in_the_terminal_and_the_browser(deal):
    game = setup_game() if deal else setup_game(seller_range=(90, 100), buyer_range=(0, 10))
    assert game.record.deal is deal
    # terminal: the rich style of the outcome line
    from rich.style import Style

    style = Style.parse(str(terminal.outcome_text(game.record, game.grid).style))
    fg, bg = style.color.triplet.hex, style.bgcolor.triplet.hex
    assert contrast(fg, bg) >= 4.5, (fg, bg)
    # browser: the colours in the banner's HTML
    html = banner_html(game.record, game.grid)
    fg, bg = re.search(r"color: (#\w{6}); background-color: (#\w{6})", html).groups()
    assert contrast(fg, bg) >= 4.5, (fg, bg)
    assert terminal.banner_colours(deal) == (fg, bg)


@pytest.mark.parametrize("key,quit", [("q", True), ("Q", True), ("q\n", True), ("quit\n", True),
                                      ("", True), ("\x04", True), ("\n", False), (" ", False),
                                      ("x", False), ("\x1b[C", False)])
def test_q_or_end_of_input_quits_any_other_key_goes_on(key, quit):
    assert terminal.wants_quit(key) is quit


def test_read_key_reads_a_line_when_not_a_terminal():
    assert terminal.read_key(io.StringIO("q\nnext\n")) == "q\n"
    assert terminal.read_key(io.StringIO("")) == ""


def _run_in_a_terminal(keys: list[bytes], timeout: float = 30.0) -> tuple[int, str]:
    """``run.py baseline --step`` on a pseudo-terminal, pressing ``keys`` at each prompt."""
    import pty

    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    proc = subprocess.Popen([sys.executable, "run.py", "baseline", "--step"], cwd=ROOT,
                            stdin=secondary, stdout=secondary, stderr=secondary, env=env,
                            close_fds=True)
    os.close(secondary)
    out = b""
    prompts = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if ready:
                try:
                    out += os.read(primary, 4096)
                except OSError:
                    break
            if out.count(b"q to quit") > prompts and prompts < len(keys):
                os.write(primary, keys[prompts])  # a single key, no Enter
                prompts += 1
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
        try:
            while True:  # what is left after the exit
                ready, _, _ = select.select([primary], [], [], 0.1)
                if not ready:
                    break
                out += os.read(primary, 4096)
        except OSError:
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_step_mode_quits_on_a_single_q():
    code, text = _run_in_a_terminal([b" ", b"q"])
    assert code == 0
    assert "stopped after round 2 of 10 (this negotiation ends in round 5)" in text
    assert "DEAL at 32" not in text  # quit before the end


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_step_mode_runs_to_the_deal_on_other_keys():
    code, text = _run_in_a_terminal([b"\r", b" ", b"x", b"\r"])
    assert code == 0
    assert "DEAL at 32" in text and "stopped" not in text
