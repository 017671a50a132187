"""The report command end to end: every section answered, every file written, bad input
refused, nothing half-written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from market import report
from market.errors import RunFailed

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def sections_of(markdown: str) -> dict[str, str]:
    """The report's sections by number: ``## N. title`` up to the next one."""
    parts = re.split(r"^## (\d+)\. ", markdown, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_the_quick_report_answers_every_question(quick_report):
    """One test reads the session's report (a second reader on another xdist worker would
    wait for it): every section, figure and table written, every answer from the run."""
    out, summary = quick_report
    assert [s["name"] for s in summary["sections"]] == list(report.SECTIONS)
    text = (out / "report.md").read_text()
    body = sections_of(text)
    assert len(body) == len(report.SECTIONS)
    for (number, part), s in zip(sorted(body.items(), key=lambda kv: int(kv[0])),
                                 summary["sections"], strict=True):
        assert part.startswith(s["title"]), number
        for label in ("**Question.**", "**Experiment.**", "**Answer.**"):
            assert label in part, (s["name"], label)
        assert len(s["answer"]) > 100 and s["answer"] in part
        assert f"--only {s['name']} " in s["command"] and s["command"] in part
        assert s["figures"], s["name"]
        for fig in s["figures"]:
            assert f"]({fig})" in part
            assert (out / fig).read_bytes()[:8] == PNG
        for table in s["tables"]:
            assert f"]({table})" in part
            assert len(pd.read_csv(out / table)) > 0, table
    assert "--quick" in text.splitlines()[4]  # the header says how it was made
    assert not list(out.glob(".*")), "temporary files left behind"

    # numbers in the answers come from the run: the bias answer quotes its table
    tests = pd.read_csv(out / "bias_tests.csv").set_index("variant")
    bias = summary["sections"][0]
    a = tests.loc["a", "difference"]
    assert f"{a:+,.0f} (" in bias["answer"]
    assert bias["numbers"]["difference"]["a"] == pytest.approx(a)

    # the legacy section shows the terminal view itself
    legacy = body[str(len(report.SECTIONS))]
    assert "```text" in legacy and "BUYER" in legacy and "SELLER" in legacy
    assert "DEAL at" in legacy or "NO DEAL" in legacy


def test_only_writes_that_section_with_the_same_numbers(report_runner, tmp_path):
    alone, together = tmp_path / "alone", tmp_path / "together"
    code, summary = report_runner(alone, "--only", "legacy")
    assert code == 0
    assert [s["name"] for s in summary["sections"]] == ["legacy"]
    assert sorted(p.name for p in alone.iterdir()) == sorted(
        ["report.md", "legacy.png", "legacy_moves.csv", "timings.csv"])
    assert list(sections_of((alone / "report.md").read_text())) == ["1"]
    # a section's seeds come from its name: the same numbers whichever sections run
    code, _ = report_runner(together, "--only", "equilibrium,legacy")
    assert code == 0
    assert (alone / "legacy_moves.csv").read_text() == (
        together / "legacy_moves.csv").read_text()


def test_a_failing_section_leaves_nothing_written(report_runner, tmp_path, monkeypatch):
    import market.report.legacy as legacy

    def fail(ctx):
        raise RunFailed("a market run failed")

    monkeypatch.setattr(legacy, "run", fail)
    (tmp_path / "keep.txt").write_text("not the report's")
    code, _ = report_runner(tmp_path, "--only", "sizes,legacy")
    assert code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "report", *args],
                          capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("args, names", [
    (["--out", "OUT", "--only", "nope"], "--only"),
    (["--out", "OUT", "--only", ","], "--only"),
    (["--out", "OUT", "--seed", "-1"], "--seed"),
    (["--out", "OUT", "--processes", "0"], "--processes"),
    (["--out", "FILE"], "--out"),
    ([], "--out"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(args, names, tmp_path):
    afile = tmp_path / "a_file"
    afile.write_text("x")
    args = [str(tmp_path / "out") if a == "OUT" else str(afile) if a == "FILE" else a
            for a in args]
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert names in lines[0]
    assert not (tmp_path / "out").exists()


def test_two_runs_with_one_seed_write_the_same_files_but_the_timings(tmp_path):
    """Timings live in timings.csv alone; every other file depends on the seed only."""
    import filecmp
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out, first = tmp_path / "out", tmp_path / "first"
    outs = [first, out]
    for k in range(2):  # the same command twice (the folder is part of the command)
        done = subprocess.run([sys.executable, str(root / "run.py"), "report", "--quick",
                               "--only", "sizes,equilibrium", "--seed", "3", "--out",
                               str(out), "--json"], capture_output=True, text=True, cwd=root,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        if k == 0:
            shutil.copytree(out, first)
    names = sorted(p.name for p in outs[0].iterdir())
    assert names == sorted(p.name for p in outs[1].iterdir()) and "timings.csv" in names
    differ = [n for n in names if not filecmp.cmp(outs[0] / n, outs[1] / n, shallow=False)]
    assert differ in ([], ["timings.csv"]), differ
    assert "train_seconds" not in (outs[0] / "sizes.csv").read_text()
