"""Long steps say what they are doing when nobody watches a terminal: plain lines on stderr,
one after a short wait, then one every few seconds, and one at the end."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from market.cli import progress

ROOT = Path(__file__).resolve().parents[2]


def test_a_step_not_drawn_says_itself_in_plain_lines(monkeypatch, capsys):
    monkeypatch.setattr(progress, "FIRST_LINE", 0.2)
    monkeypatch.setattr(progress, "EVERY", 0.3)
    with progress.progress_bar("market", 100, "steps") as update:  # stderr is captured
        for _ in range(10):
            update(advance=10)
            time.sleep(0.1)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[progress] market: ") and "of 100 steps" in lines[0]
    assert len(lines) >= 3 and lines[-1].startswith("[progress] market: done in ")
    with progress.progress_bar("quick", 5) as update:  # under the first wait: nothing said
        update(advance=5)
    assert capsys.readouterr().err == ""


def test_a_piped_command_is_never_silent_for_long():
    """Stdout and stderr to pipes, as under a scheduler: stderr's lines come while it works."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "run.py", "train", "--preset", "default",
                             "--seeds", "96"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    stamps = []
    assert proc.stderr is not None
    for line in proc.stderr:
        stamps.append((time.monotonic() - start, line.strip()))
    assert proc.wait(timeout=300) == 0
    end = time.monotonic() - start
    said = [s for s in stamps if "compiling" not in s[1]]
    assert said and said[-1][1].split(": ")[-1].startswith("done in"), stamps
    times = [t for t, _ in said] + [end]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert max(gaps) < 3.0, stamps  # never silent for 3 s (progress.EVERY: 2 s)


def test_a_piped_progress_line_is_plain_text_not_rich_markup():
    from market.cli.progress import PlainLines

    lines = PlainLines("batch", 10, "runs")
    lines.update(completed=3, description="2 process(es) [red]1 failed[/]")
    assert lines.line().startswith("batch 2 process(es) 1 failed: 3 of 10 runs")


def test_a_new_phase_drops_the_last_phase_s_count():
    """The tournament's last phase said "writing the tables and drawing the heatmap: 100 of
    100", the count of its pairings."""
    from market.cli.progress import PlainLines

    lines = PlainLines("tournament", 100, "")
    lines.update(description="pairings", completed=100)
    lines.update(description="writing the tables and drawing the heatmap", phase=True)
    assert lines.line().startswith("tournament writing the tables and drawing the heatmap: "
                                   "working (")
    with progress.progress_bar("drawn", 10, quiet=True) as update:  # the bar's form too
        update(completed=10)
        update(description="next", phase=True)
