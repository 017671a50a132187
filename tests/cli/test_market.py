"""``python run.py market``: outputs a user relies on, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``run.py market ARGS`` in this process (tests/support/cli_run.py)."""
    return cli_run.run("market", *args)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--buyer-mix", "averaging=0.5,qlearning=0.4"], "--buyer-mix"),
        (["--seller-mix", "averaging=0.5,bogus=0.5"], "unknown strategy 'bogus'"),
        (["--buyers", "-4"], "--buyers"),
        (["--sellers", "0"], "--sellers"),
        (["--buyer-mix", ""], "at least one strategy"),
        (["--seller-mix", "averaging=x"], "must be a number"),
        (["--value-range", "9,3"], "--value-range"),
        (["--common-wallet"], "--teams"),
        (["--prices", "1"], "--prices"),
        (["--clock", "--clock-parts", "clocks"], "--clock-parts must be one of both, state, wait"),
        (["--institution", "auction"], "--institution must be one of pairs, cda, call"),
        (["--institution", "cda", "--buyer-mix", "negmas"],
         "'negmas' cannot play in --institution cda (it decides in Python"),
        (["--institution", "call", "--seller-mix", "genius"], "decides in Python"),
        (["--institution", "call", "--discount", "0.9"], "time pressure"),
        (["--institution", "cda", "--breakdown", "0.1"], "time pressure"),
        (["--schedule", "symmetric"], "--buyers must be a multiple of 11 (got 50)"),
        (["--schedule", "1,x;2"], "--schedule: its values must be numbers"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    out_dir = tmp_path / "out"
    res = run_cli(*args, "--steps", "3", "--out", str(out_dir))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]
    assert "Traceback" not in res.stderr
    assert not out_dir.exists()


def test_run_writes_tables_figure_and_json(tmp_path):
    out_dir = tmp_path / "run"
    args = ["--buyers", "30", "--sellers", "20", "--buyer-mix", "averaging=0.5,qlearning=0.5",
            "--steps", "12", "--period", "4", "--seed", "7", "--out", str(out_dir)]
    res = run_cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    s = data["summary"]
    assert s["steps"] == 12 and 0 <= s["efficiency"] <= 1
    assert "earnings.buyer.qlearning" in s and "earnings.seller.averaging" in s
    names = {Path(f).name for f in data["files"]}
    assert names == {"model.parquet", "periods.parquet", "prices.parquet", "agents.parquet",
                     "summary.json", "market.png"}
    model_df = pd.read_parquet(out_dir / "model.parquet")
    assert len(model_df) == 13 and "mean_price" in model_df
    assert len(pd.read_parquet(out_dir / "periods.parquet")) == 3
    prices = pd.read_parquet(out_dir / "prices.parquet")
    assert prices["deals"].sum() == s["deals"] == model_df["deals"].sum()
    agents = pd.read_parquet(out_dir / "agents.parquet")
    assert len(agents) == 3 * 50 and set(agents["side"]) == {"seller", "buyer"}
    assert (out_dir / "market.png").read_bytes()[:4] == b"\x89PNG"
    # same seed, same tables
    again = tmp_path / "again"
    res2 = run_cli(*args[:-1], str(again))
    assert res2.returncode == 0
    pd.testing.assert_frame_equal(model_df, pd.read_parquet(again / "model.parquet"))
    assert "efficiency" in res2.stdout and "qlearning" in res2.stdout


@pytest.mark.parametrize("blocked", ["market.png", "summary.json", "model.parquet"])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, blocked):
    out_dir = tmp_path / "out"
    (out_dir / blocked).mkdir(parents=True)
    res = run_cli("--steps", "3", "--out", str(out_dir))
    assert res.returncode == 2
    assert res.stderr.strip() == (f"run.py market: error: --out: {out_dir / blocked} is a "
                                  "directory, not a file")
    assert [p.name for p in out_dir.iterdir()] == [blocked]  # nothing written beside it


def test_a_failure_while_writing_leaves_no_file(tmp_path, capsys, monkeypatch):
    from market.cli import main, market_cmd

    def broken(fig, path, dpi=120):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(market_cmd, "save_figure", broken)
    out_dir = tmp_path / "new" / "out"
    assert main(["market", "--steps", "2", "--buyers", "4", "--sellers", "4",
                 "--out", str(out_dir)]) == 74  # not bad input (2): the write failed
    err = capsys.readouterr().err
    assert err.strip().endswith(f"error: could not write {out_dir / 'market.png'}: No space "
                                "left on device (nothing half-written is left)")
    assert list(tmp_path.iterdir()) == []  # the Parquet files and the folders made for them


@pytest.mark.parametrize("args", [["--value-range=-1e308,1e308"], ["--cost-range=-1e308,1e308"],
                                  ["--value-range", "1e308,1.7e308"]])
def test_money_ranges_that_would_overflow_are_refused(tmp_path, args):
    res = run_cli(*args, "--steps", "2", "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "must lie within [-1e+12, 1e+12]" in res.stderr and args[0][:12] in res.stderr
    assert not (tmp_path / "out").exists()


def test_the_summary_counts_in_words_with_thousands_separators(tmp_path):
    """``1 period``, not ``1 periods``; ``1,200 buyers``, not ``1200``."""
    r = run_cli("--buyers", "1200", "--sellers", "1000", "--steps", "5", "--out",
                str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert "Market: 1,000 sellers x 1,200 buyers, 5 steps (1 period of 10)" in r.stdout


def test_a_table_figure_never_mixes_an_exponent_with_plain_numbers():
    from market.cli.common import figure

    assert [figure(x) for x in (0.85, 45.2, 150.0, 933.3, 1100.0, 2260.4)] == [
        "0.85", "45.2", "150", "933", "1,100", "2,260"]


@pytest.mark.parametrize(("args", "words"), [
    (["--seed", "1", "--seed", "2"], "--seed is given 2 times ('1', '2'): give it once"),
    (["--institution=cda", "--institution", "pairs"], "--institution is given 2 times"),
    (["--seller-mix", "zi-c", "--seller-mix", "averaging"], "--seller-mix is given 2 times"),
    (["--seed", "1", "--see", "2"], "--seed is given 2 times ('1', '2')"),  # abbreviated
    (["--inst", "cda", "--institution", "pairs"], "--institution is given 2 times"),
    (["--institution", "cda", "--first", "seller", "--buyer-mix", "zi-c", "--seller-mix",
      "zi-c"], "--first seller says who opens a negotiation: it applies to --institution "
               "pairs only"),
    (["--teams", "5000000"], "--teams must be at most the larger side's traders (50)"),
    (["--buyer-mix", "a=0.5,,b=0.5"], "--buyer-mix: an empty member in 'a=0.5,,b=0.5'"),
    (["--schedule", "3,,2;1", "--buyers", "2", "--sellers", "1"],
     "--schedule: an empty member among its values"),
    (["--schedule", "symmetric", "--buyers", "11", "--sellers", "11", "--value-range", "0,50"],
     "--value-range: --schedule 'symmetric' fixes values and costs, so it would be ignored"),
    (["--schedule", "symmetric", "--buyers", "11", "--sellers", "11", "--distribution",
      "normal"], "--distribution: --schedule 'symmetric' fixes values and costs"),
    (["--institution", "cda", "--schedule", "symmetric", "--prices", "2", "--buyers", "22",
      "--sellers", "22", "--buyer-mix", "zi-c", "--seller-mix", "zi-c"],
     "--prices 2: no price of the grid lies in the competitive band (2) of --schedule "
     "'symmetric', so the competitive trades cannot happen; --prices 3 is the fewest"),
])
def test_input_that_would_be_ignored_or_kept_silently_is_refused_in_one_line(tmp_path, args,
                                                                              words):
    done = run_cli("--steps", "2", "--out", str(tmp_path / "out"), *args)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_schedule_s_run_does_not_record_the_ranges_it_does_not_read():
    done = run_cli("--steps", "2", "--schedule", "symmetric", "--buyers", "11", "--sellers",
                   "11", "--json")
    assert done.returncode == 0, done.stderr
    recorded = json.loads(done.stdout)["parameters"]
    assert recorded["schedule"] == "symmetric"
    assert not {"value_range", "cost_range", "distribution"} & set(recorded)
