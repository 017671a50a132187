"""The command line's contract: help, one-line errors with exit code 2."""

import re
import subprocess
import sys
from pathlib import Path

import cli_run  # tests/support, on pytest's pythonpath
import pytest

ROOT = Path(__file__).resolve().parents[2]


run_cli = cli_run.run  # a command in this process (tests/support/cli_run.py)


def test_help_lists_the_commands():
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("baseline", "train", "market", "bench"):
        assert command in out.stdout


def test_no_command_prints_the_command_table():
    out = run_cli()
    assert out.returncode == 0 and not out.stderr
    from market.cli import COMMANDS

    for command in COMMANDS:
        assert f"  {command} " in out.stdout
    assert "--help" in out.stdout


def test_unknown_command_is_one_line_exit_2():
    out = run_cli("no-such-command")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_a_misspelt_command_gets_the_closest_name():
    out = run_cli("trian", "--seeds", "2")
    assert out.returncode == 2 and "did you mean train?" in out.stderr


@pytest.mark.parametrize("args", [["bench", "--repeats", "0"], ["bench", "--only", "nope"]])
def test_bad_values_are_one_line_exit_2(args):
    out = run_cli(*args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert args[1] in lines[0]  # the message names the parameter


@pytest.mark.parametrize(
    "args, names",
    [
        (["evaluate", "--spe", "--prices", "1000", "--rounds", "1000"], "--prices"),
        (["train", "--prices", "1000", "--rounds", "1000"], "--prices"),
        (["train", "--seeds", "100000"], "--seeds"),
        (["train", "--test-episodes", "100000000000"], "--test-episodes"),
    ],
)
def test_sizes_beyond_memory_are_refused_before_allocating(args, names):
    out = run_cli(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in out.stderr


def test_an_unwritable_output_fails_before_training_and_leaves_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    plot = tmp_path / "fig.png"
    out = run_cli("train", "--cycles", "1", "--episodes", "10", "--plot", str(plot),
                  "--save", str(blocker / "t.npz"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "--save" in out.stderr
    assert not plot.exists()


def test_a_value_starting_with_a_minus_sign_is_read_as_a_value(capsys):
    from market.cli import main

    assert main(["market", "--value-range", "-10,10", "--cost-range", "-5,5", "--steps", "2",
                 "--buyers", "4", "--sellers", "4", "--json"]) == 0
    import json

    params = json.loads(capsys.readouterr().out)["parameters"]
    assert params["value_range"] == [-10.0, 10.0] and params["cost_range"] == [-5.0, 5.0]


@pytest.mark.parametrize("value", ["inf", "1e308", "0", "-1", "nan", "x"])
def test_connect_timeout_is_a_finite_number_in_range(value):
    out = run_cli("batch", "--param", "n_buyers=5", "--scheduler", "127.0.0.1:1",
                  "--connect-timeout", value, "--out", "/nonexistent/x.parquet")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "--connect-timeout must be a number in [0.1, 3600]" in out.stderr


def test_outside_its_environment_run_py_says_how_to_run_it_in_one_line(tmp_path):
    """A Python without the project's libraries (here: isolated, with no site-packages) gets
    one line naming what is missing and the virtual environment's command, not a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-S", str(root / "run.py"), "baseline"],
                         capture_output=True, text=True, cwd=root, timeout=60)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "lacks numpy" in lines[0], out.stderr
    assert ".venv/bin/python run.py" in lines[0] or "pip install" in lines[0]


def test_the_console_script_is_run_py_under_its_own_name(monkeypatch, capsys):
    import tomllib
    from pathlib import Path

    from market import cli
    from market.cli import common

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    assert scripts == {"negotiation-market": "market.cli:console"}
    monkeypatch.setattr(common, "PROG", common.PROG)  # restored after the test
    monkeypatch.setattr("sys.argv", ["negotiation-market", "market", "--prices", "1"])
    with pytest.raises(SystemExit) as stop:
        cli.console()
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith("negotiation-market market: error: ")


def test_piped_output_keeps_long_lines_whole(tmp_path):
    """Rich wraps at 80 columns when it cannot see a terminal; piped output keeps each line
    whole, as the README shows it (here the tournament's caption of its columns)."""
    import os

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([sys.executable, str(root / "run.py"), "tournament", "--strategies",
                          "averaging,boulware,conceder,hardliner,linear,tit-for-tat",
                          "--repetitions", "2", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    caption = [ln for ln in out.stdout.splitlines() if ln.startswith("columns: ")]
    assert len(caption) == 1 and caption[0].endswith("(see deal_rate.csv)"), out.stdout
    assert len(caption[0]) > 80


def test_ranges_are_written_lo_comma_hi_everywhere(capsys, tmp_path):
    """``LO,HI`` in every command: the baseline's ranges (its one-end options still work)
    and the tournament's (its older ``LO-HI`` still accepted)."""
    import json

    from market.cli import main

    def run(*args):
        assert main(list(args)) == 0
        return json.loads(capsys.readouterr().out)

    a = run("baseline", "--buyer-range", "10,70", "--json")
    b = run("baseline", "--buyer-min", "10", "--buyer-max", "70", "--json")
    assert a == b and a["buyer"]["range"] == [10, 70]
    with pytest.raises(SystemExit) as stop:  # HI below LO: argparse's one line, exit 2
        main(["baseline", "--seller-range", "70,10"])
    assert stop.value.code == 2
    assert "--seller-range must satisfy 0 <= LO <= HI" in capsys.readouterr().err
    for text in ("2,4", "2-4"):
        out = run("tournament", "--strategies", "averaging,hardliner", "--repetitions", "2",
                  "--seller-range", text, "--out", str(tmp_path / text), "--json")
        assert out["seller_range"] == [2, 4]


def test_a_notice_while_the_command_starts_is_one_plain_line(monkeypatch):
    """Notices raised by imports (numba finding no cache folder it may write to) come before
    the command is known: still one plain line, not Python's warning with its source."""
    import warnings

    import market.cli as cli
    from market.compiled.internals import CompileNotice

    def starting() -> None:
        warnings.warn("numba has no cache folder it may write to", CompileNotice, stacklevel=2)

    monkeypatch.setattr(cli, "check_environment", starting)
    out = cli_run.run("baseline", "--json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == ["run.py: note: numba has no cache folder it may write to"]


def test_a_long_list_of_spe_outcomes_is_summarised_in_one_line(capsys):
    from market.cli import main

    assert main(["evaluate", "--spe", "--prices", "100", "--rounds", "10", "--seller-cost",
                 "0.01", "--buyer-cost", "0.02"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    said = out[out.index("seller first: outcome"):out.index("buyer first: outcome")]
    assert "77 outcomes, levels 63-82 on offers 0-6" in said and len(said) < 400


def test_train_says_whether_the_result_is_subgame_perfect(capsys):
    """The training guide promises the check: the table and --json both say it."""
    import json

    from market.cli import main

    assert main(["train", "--preset", "perfect", "--seeds", "3", "--prices", "4", "--rounds",
                 "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["subgame_perfect"] == 3  # the perfect preset on a small game: every seed
    assert main(["train", "--preset", "perfect", "--seeds", "3", "--prices", "4", "--rounds",
                 "2"]) == 0
    assert "subgame perfect (no profitable one-shot deviation in any subgame): 3 of 3 seeds" \
        in capsys.readouterr().out


@pytest.mark.parametrize("command", ["baseline", "train", "evaluate", "market", "viz", "batch",
                                     "tournament", "plot", "report", "bench"])
def test_help_is_plain_text_not_rest_markup(command, capsys):
    from market.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and not re.search(r":(mod|class|func|meth|data):`", text)
