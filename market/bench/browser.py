"""The browser view measured in a real browser: clicked steps and play, end to end.

The in-process rows of :mod:`market.bench.view` leave out the websocket and
the browser's drawing. Here ``run.py viz`` serves the default market page
(50 + 50 traders) to headless Chromium, and the timing runs inside the
page, so the driver's own round trips do not count:

- a clicked step: from the click on Step until the page shows the new step
  count, every chart has drawn its new data (the charts count their pending
  draws in ``window.liveCharts``, see ``market/view/chart.vue``) and the
  browser has painted twice;
- play: the step counter read at the start and after five seconds of ▶ at
  the default 100 ms play interval, as steps per second.

The same functions drive the browser test (``tests/view/test_browser.py``).
Chromium is Debian's ``/usr/bin/chromium``, driven by Playwright (both in
the ``dev`` extra's reach: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from market.processes import preexec_die_with_parent

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1800}
ROOT = Path(__file__).resolve().parents[2]
#: clicks a measure makes, and seconds of play
CLICKS = 10
PLAY_SECONDS = 5.0

#: one clicked step, timed in the page: ms from the click to the new count shown, every chart
#: drawn and two frames painted
CLICK_JS = """async (k) => {
  const counter = [...document.querySelectorAll('*')].find(
      e => e.childElementCount === 0 && /^Step: \\d+$/.test(e.textContent));
  const button = [...document.querySelectorAll('button')].find(
      b => b.textContent.trim() === 'Step');
  const charts = () => window.liveCharts || {pending: 0};
  const t0 = performance.now();
  const shown = new Promise(resolve => {
    const seen = new MutationObserver(() => {
      if (counter.textContent === 'Step: ' + k) { seen.disconnect(); resolve(); }
    });
    seen.observe(counter, {subtree: true, childList: true, characterData: true});
  });
  button.click();
  await shown;
  const frame = () => new Promise(r => requestAnimationFrame(r));
  await frame();
  while (charts().pending > 0) { await frame(); }
  await frame();
  return performance.now() - t0;
}"""

#: steps the page counts during ``seconds`` of play (the caller has pressed ▶)
PLAY_JS = """async (seconds) => {
  const counter = [...document.querySelectorAll('*')].find(
      e => e.childElementCount === 0 && /^Step: \\d+$/.test(e.textContent));
  const read = () => parseInt(counter.textContent.split(' ')[1]);
  const n0 = read(), t0 = performance.now();
  await new Promise(r => setTimeout(r, seconds * 1000));
  return (read() - n0) / ((performance.now() - t0) / 1000);
}"""


def missing() -> str:
    """Why the browser cannot be driven here ("" when it can)."""
    reasons = []
    if not Path(CHROMIUM).exists():
        reasons.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reasons.append("the playwright package is missing (pip install -e '.[dev]')")
    return "; ".join(reasons)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(timeout: float = 90) -> Iterator[str]:
    """``run.py viz`` on a free loopback port, for the block; its base URL.

    The server runs in its own process group and dies with this process
    (the kernel's parent-death signal), so a killed bench leaves nothing.
    """

    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "viz", "--host", "127.0.0.1",
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                            preexec_fn=preexec_die_with_parent)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready or not proc.stdout.readline().startswith("Market view:"):
            raise RuntimeError("the view's server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


def open_market(page: Any, base: str) -> None:
    """The market page loaded, its six charts drawn."""
    page.goto(base + "/", wait_until="networkidle")
    page.get_by_text("Step: 0", exact=True).wait_for(timeout=60_000)
    page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 6 && "
                           "(window.liveCharts || {pending: 0}).pending === 0",
                           timeout=60_000)


def clicked_steps(page: Any, clicks: int = CLICKS) -> list[float]:
    """Milliseconds of each of ``clicks`` Step clicks in a row, end to end (see CLICK_JS)."""

    start = int(page.get_by_text(re.compile(r"^Step: \d+$")).inner_text().split()[1])
    return [float(page.evaluate(CLICK_JS, start + k)) for k in range(1, clicks + 1)]


def played_rate(page: Any, seconds: float = PLAY_SECONDS) -> float:
    """Steps per second over ``seconds`` of play; the page is left paused."""
    page.get_by_role("button", name="▶", exact=True).click()
    try:
        return float(page.evaluate(PLAY_JS, seconds))
    finally:
        page.get_by_role("button", name="❚❚", exact=True).click()
        page.get_by_role("button", name="▶", exact=True).wait_for(timeout=20_000)


def measure(repeats: int) -> dict[str, list[float]]:
    """Clicked-step times (ms, ``repeats`` runs of :data:`CLICKS`) and play rates."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"clicks": [], "play": []}
    with served() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            open_market(page, base)
            clicked_steps(page, 3)  # warm-up: the first draws compile Vega's dataflow
            for _ in range(repeats):
                out["clicks"] += clicked_steps(page)
                out["play"].append(played_rate(page))
        finally:
            browser.close()
    return out
