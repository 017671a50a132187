"""The real thing: ``python run.py viz`` served to headless Chromium, offline.

Starts the command as a subprocess on a free loopback port, drives Debian's
``/usr/bin/chromium`` with Playwright, steps the market and plays the
two-agent game, and checks what a user would see: the step counter moves,
the charts change, no error or traceback text, no request leaves the
machine, no asset is missing. Ctrl-C (SIGINT to the process group) must stop
the server cleanly. A screenshot goes to pytest's tmp dir, or to the path in
``VIZ_SCREENSHOT`` (how the README's picture is made).

Skipped only when Chromium or Playwright is missing and ``CI`` is not
``"true"``; in CI a missing browser is a failure.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ERROR_TEXT = re.compile(r"Traceback|Error|error in step|Exception", re.IGNORECASE)

pytestmark = pytest.mark.browser


def _browser_or_skip():
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("the Python package playwright is missing")
        sync_playwright = None
    if missing:
        reason = "; ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test must run in CI: {reason}")
        pytest.skip(reason)
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """One line of the server's stdout, or fail after ``timeout`` seconds."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError(f"run.py viz printed nothing within {timeout} s")
    return proc.stdout.readline()


def test_viz_in_headless_chromium(tmp_path):
    sync_playwright = _browser_or_skip()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "run.py", "viz", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: Ctrl-C and cleanup reach the server too
    )
    base = f"http://127.0.0.1:{port}"
    try:
        first = _read_line(proc, 60)
        assert first.strip() == f"Market view:    {base}/", first

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1900})
                requests: list[str] = []
                failed: list[str] = []
                page.on("request", lambda r: requests.append(r.url))
                # the session-close beacon sent on navigation is cut short by design
                page.on("requestfailed", lambda r: None if "/_solara/api/close/" in r.url
                        else failed.append(r.url))
                page.on("response", lambda r: failed.append(f"{r.status} {r.url}")
                        if r.status >= 400 else None)

                # --- market page: step a few times -----------------------------------------
                page.goto(base + "/", wait_until="networkidle")
                counter = page.get_by_text(re.compile(r"^Step: \d+$"))
                counter.wait_for(timeout=30_000)
                assert counter.inner_text() == "Step: 0"
                # the summary is text and the pair's trace waits for a step: five charts
                page.wait_for_function("document.querySelectorAll('img').length >= 5",
                                       timeout=30_000)
                charts_before = page.eval_on_selector_all("img", "els => els.map(e => e.src)")
                assert len(charts_before) == 5, charts_before
                for k in range(1, 4):
                    page.get_by_role("button", name="Step", exact=True).click()
                    page.get_by_text(f"Step: {k}", exact=True).wait_for(timeout=20_000)
                page.get_by_text("pair (of", exact=False).wait_for(timeout=20_000)
                page.wait_for_load_state("networkidle")
                charts_after = page.eval_on_selector_all("img", "els => els.map(e => e.src)")
                assert len(charts_after) == len(charts_before) + 1  # the pair's negotiation
                assert not set(charts_before) & set(charts_after), "charts did not redraw"
                body = page.inner_text("body")
                assert "Step 3, trading period 1" in body
                assert not ERROR_TEXT.search(body), ERROR_TEXT.search(body)
                shot = Path(os.environ.get("VIZ_SCREENSHOT") or tmp_path / "market.png")
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 50_000  # a rendered page, not a blank one

                # Mesa's reset, then play and pause
                page.get_by_role("button", name="Reset", exact=True).click()
                page.get_by_text("Step: 0", exact=True).wait_for(timeout=20_000)
                page.get_by_role("button", name="▶", exact=True).click()
                page.get_by_text("Step: 2", exact=True).wait_for(timeout=30_000)
                page.get_by_role("button", name="❚❚", exact=True).click()
                page.get_by_role("button", name="▶", exact=True).wait_for(timeout=20_000)
                # paused: the counter settles (a step already under way may still land)
                readings = []
                for _ in range(20):
                    page.wait_for_timeout(1000)
                    readings.append(page.get_by_text(re.compile(r"^Step: \d+$")).inner_text())
                    if len(readings) >= 3 and len(set(readings[-3:])) == 1:
                        break
                assert len(set(readings[-3:])) == 1, f"still stepping after pause: {readings}"
                assert not ERROR_TEXT.search(page.inner_text("body"))

                # --- two-agent page: the legacy game to its end ---------------------------
                page.goto(base + "/two-agent", wait_until="networkidle")
                page.get_by_text("Move 0 of 10").wait_for(timeout=30_000)
                page.get_by_role("button", name="Play to the end").click()
                page.get_by_text("Move 10 of 10").wait_for(timeout=20_000)
                table = page.locator("table").last.inner_text()
                assert "seller\taccept\t32" in table, table
                body = page.inner_text("body")
                assert not ERROR_TEXT.search(body), ERROR_TEXT.search(body)
                page.screenshot(path=str(tmp_path / "two_agent.png"))

                outside = [u for u in requests
                           if not u.startswith((base, "blob:", "data:"))]
                assert not outside, f"requests left the machine: {outside[:5]}"
                assert not failed, f"failed or missing resources: {failed[:5]}"
            finally:
                browser.close()

        # --- Ctrl-C stops the server cleanly --------------------------------------------
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        with socket.socket() as s:  # nobody listens on the port any more
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is fine
            s.bind(("127.0.0.1", port))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
