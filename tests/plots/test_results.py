"""Plots of batch results: t-intervals, which figures are drawn, the plot command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market.errors import UsageError
from market.plots.results import plot_results, summarize, t_interval
from market.runs import batch
from market.sim.results import load_results
from tests.support import cli_run

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


def test_t_interval_matches_the_textbook_formula():
    mean, half = t_interval([1.0, 2.0, 3.0, 4.0])
    # t(0.975, 3) = 3.182446; sd = 1.290994
    assert mean == pytest.approx(2.5)
    assert half == pytest.approx(3.182446 * 1.290994 / 2, rel=1e-5)
    assert np.isnan(t_interval([5.0])[1]) and t_interval([5.0])[0] == 5.0


def test_summarize_groups_by_the_swept_value():
    df = pd.DataFrame({"x": [0, 0, 1, 1, 1], "m": [1.0, 3.0, 2.0, 2.0, np.nan]})
    s = summarize(df, "x", "m")
    assert s["mean"].tolist() == [2.0, 2.0] and s["n"].tolist() == [2, 2]
    assert s["half"].iloc[1] == 0.0


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plots") / "r.parquet"
    grid = batch.validate_grid(batch.parse_param_options(
        ["n_buyers=6", "n_sellers=6", "buyer_mix.zi-c=0,0.5,1", "rounds=3,5"]))
    batch.run_batch(batch.expand(grid, 3, 2, 6), out, processes=1)
    return out


def test_plot_writes_one_png_per_figure(results, tmp_path):
    files = plot_results(results, tmp_path)
    names = sorted(f.name for f in files)
    assert names == ["buyer_mix_zi-c_earnings.png", "buyer_mix_zi-c_market.png",
                     "rounds_market.png"]
    for f in files:
        assert f.read_bytes()[:8] == PNG and f.stat().st_size > 5_000


def test_table_metadata_names_parameters_and_metrics(results):
    _, params, metrics = load_results(results)
    assert params == ["n_buyers", "n_sellers", "buyer_mix.zi-c", "rounds"]
    assert "efficiency" in metrics and "earnings.buyer.zi-c" in metrics


def test_a_single_grid_point_gives_earnings_bars(tmp_path):
    out = tmp_path / "one.parquet"
    grid = batch.validate_grid({"n_buyers": [5], "n_sellers": [5]})
    batch.run_batch(batch.expand(grid, 2, 0, 4), out, processes=1)
    files = plot_results(out, tmp_path / "p")
    assert [f.name for f in files] == ["earnings.png"]


def test_not_a_results_table(tmp_path):
    f = tmp_path / "x.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(f)
    with pytest.raises(UsageError, match="not a batch results table"):
        load_results(f)
    g = tmp_path / "y.parquet"
    g.write_text("nonsense")
    with pytest.raises(UsageError, match="Parquet"):
        load_results(g)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``run.py plot ARGS`` in this process (tests/support/cli_run.py)."""
    return cli_run.run("plot", *args, cwd=ROOT)


def test_cli_plot(results, tmp_path):
    p = run_cli(str(results), "--out", str(tmp_path / "figs"))
    assert p.returncode == 0, p.stderr
    assert len(list((tmp_path / "figs").glob("*.png"))) == 3
    assert p.stdout.count("wrote ") == 3


def test_cli_missing_file_is_one_line_exit_2(tmp_path, capsys):
    from market.cli import main

    assert main(["plot", str(tmp_path / "missing.parquet")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "RESULTS" in err


def damaged(results: Path, tmp_path: Path, meta=None, nulls: bool = False) -> Path:
    """The results table with its metadata replaced, or a parameter missing in one row."""
    df = pd.read_parquet(results)
    if nulls:
        df["n_buyers"] = df["n_buyers"].astype("float64")
        df.loc[2, "n_buyers"] = np.nan
    else:
        df.attrs["batch"] = meta
    path = tmp_path / "damaged.parquet"
    df.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("meta, nulls, needle", [
    (["n_buyers"], False, "its batch metadata must be a mapping as `run.py batch` writes it "
                          "(got list)"),
    ({"params": 5}, False, "its batch metadata's 'params' must be a list of column names"),
    ({"params": ["rounds"], "metrics": "efficiency"}, False,
     "its batch metadata's 'metrics' must be a list"),
    (None, True, "parameter column 'n_buyers' has rows without a value"),
])
def test_a_damaged_table_is_one_line_exit_2_and_no_figure(results, tmp_path, capsys, meta,
                                                          nulls, needle):
    from market.cli import main

    path = damaged(results, tmp_path, meta, nulls)
    out = tmp_path / "figs"
    assert main(["plot", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"run.py plot: error: RESULTS {path}: {needle}")
    assert not out.exists()


def test_every_figure_path_is_checked_before_drawing(results, tmp_path, capsys, monkeypatch):
    import market.plots.results as plots
    from market.cli import main

    monkeypatch.setattr(plots, "_metric_figure", lambda *a: pytest.fail("drew a figure"))
    out = tmp_path / "figs"
    (out / "rounds_market.png").mkdir(parents=True)
    assert main(["plot", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    blocked = out / "rounds_market.png"
    assert err == f"run.py plot: error: --out: {blocked} is a directory, not a file"
    assert [p.name for p in out.iterdir()] == ["rounds_market.png"]


def test_a_category_is_points_with_error_bars_in_the_order_swept():
    """An institution is no number: no line joins two of them, no band lies between, and
    they stand in the order the batch swept them (not alphabetically)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from market.plots import results as pr

    df = pd.DataFrame({"institution": ["pairs", "cda", "call"] * 2,
                       "efficiency": [0.8, 0.9, 0.95, 0.82, 0.92, 0.97]})
    pos, ticks = pr._positions(df["institution"])
    assert ticks == ["pairs", "cda", "call"]
    fig, ax = plt.subplots()
    try:
        pr._line(ax, pr.summarize(df, "institution", "efficiency"), "institution", pos, "all",
                 categories=True)
        assert all(line.get_linestyle() == "None" for line in ax.get_lines())
        assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
        ys = ax.get_lines()[0].get_ydata()
        assert list(np.round(ys, 3)) == [0.81, 0.91, 0.96]  # pairs, cda, call
    finally:
        plt.close(fig)
