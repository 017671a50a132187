"""Bench rows are marked against their targets, and ``--check`` fails on a missed one."""

from __future__ import annotations

import json

import pytest

import market.bench as bench
from market.bench import BenchRow, at_least, at_most
from market.cli import main


def test_targets_mark_rows_met_or_missed():
    assert BenchRow("s", "fast", 12.0, "x", target=at_least(10)).status == "met"
    assert BenchRow("s", "slow", 7.3, "x", target=at_least(10, ">= 10x")).status == "missed"
    assert BenchRow("s", "small", 0.4, "s", target=at_most(0.5)).status == "met"
    assert BenchRow("s", "info", 1.0, "s").status == ""
    assert str(at_least(10, ">= 10x")) == ">= 10x" and str(at_most(2)) == "<= 2"


@pytest.mark.parametrize("value,check,code", [(7.3, True, 1), (7.3, False, 0), (12.0, True, 0)])
def test_check_exits_1_only_when_a_target_is_missed(monkeypatch, capsys, value, check, code):
    rows = [BenchRow("training", "speed-up", value, "x", target=at_least(10, ">= 10x")),
            BenchRow("training", "rate", 5.0, "episodes/s", spread=(4.0, 6.0))]
    monkeypatch.setattr(bench, "run_sections", lambda names, repeats, quick, on_section=None: rows)
    args = ["bench", "--only", "training", "--json"] + (["--check"] if check else [])
    assert main(args) == code
    out = json.loads(capsys.readouterr().out)
    assert out["targets"] == 1 and out["missed"] == (value < 10)
    assert out["rows"][0]["status"] == ("missed" if value < 10 else "met")
    assert out["rows"][1]["spread"] == [4.0, 6.0]


def test_text_output_says_missed_and_summarises(monkeypatch, capsys):
    rows = [BenchRow("training", "speed-up", 7.3, "x", target=at_least(10, ">= 10x"))]
    monkeypatch.setattr(bench, "run_sections", lambda names, repeats, quick, on_section=None: rows)
    assert main(["bench", "--only", "training"]) == 0
    out = capsys.readouterr().out
    assert "MISSED" in out and "targets: 0 of 1 met; missed: training: speed-up" in out


@pytest.mark.parametrize("only", [",", " ", "nope", "training,nope"])
def test_only_must_name_sections(capsys, only):
    assert main(["bench", "--only", only]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--only" in err[0]
