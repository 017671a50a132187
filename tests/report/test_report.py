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

pytestmark = pytest.mark.xdist_group("report")


def sections_of(markdown: str) -> dict[str, str]:
    """The report's sections by number: ``## N. title`` up to the next one."""
    parts = re.split(r"^## (\d+)\. ", markdown, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_section_is_answered_with_its_figure_tables_and_command(quick_report):
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


def test_numbers_in_the_answers_come_from_the_run(quick_report):
    """The bias answer quotes the difference that its table holds."""
    out, summary = quick_report
    tests = pd.read_csv(out / "bias_tests.csv").set_index("variant")
    bias = next(s for s in summary["sections"] if s["name"] == "bias")
    a = tests.loc["a", "difference"]
    assert f"{a:+,.0f} (" in bias["answer"]
    assert bias["numbers"]["difference"]["a"] == pytest.approx(a)


def test_the_legacy_section_shows_the_terminal_view(quick_report):
    out, _ = quick_report
    part = sections_of((out / "report.md").read_text())[str(len(report.SECTIONS))]
    assert "```text" in part and "BUYER" in part and "SELLER" in part
    assert "DEAL at" in part or "NO DEAL" in part


def test_only_writes_that_section_and_reproduces_it(quick_report, report_runner, tmp_path):
    out, _ = quick_report
    code, summary = report_runner(tmp_path, "--only", "legacy")
    assert code == 0
    assert [s["name"] for s in summary["sections"]] == ["legacy"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["report.md", "legacy.png", "legacy_moves.csv"])
    assert list(sections_of((tmp_path / "report.md").read_text())) == ["1"]
    # the same seed gives the same numbers, alone or in the full report
    assert (tmp_path / "legacy_moves.csv").read_text() == (out / "legacy_moves.csv").read_text()


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
