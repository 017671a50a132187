"""Fuzzing every command's options: the command line's contract holds whatever the values.

For each command, hypothesis draws a command line: a small base that runs
in a blink when valid (a few traders, two steps, one iteration), with one
to three of the command's options (read from its parser, so a new option is
fuzzed too) set to random or adversarial values: numbers out of range,
huge, negative, nan, inf, empty, text where numbers go, bad strategy specs,
paths that are folders, missing, damaged or of another game. Each line runs
in this process through :func:`market.cli.main`, in an empty folder of its
own, and must keep the contract every user relies on:

- exit code 0 or 2 (0: it ran; 2: a bad value);
- on 2, at most one line on stderr, and nothing left in the folder;
- never a traceback, never a RuntimeWarning (numbers overflowing);
- with ``--json`` and exit 0, valid JSON on stdout.

``viz`` serves and ``bench`` runs for minutes, so only their option parsing
is fuzzed: the fuzzed options come first and an invalid companion option
last, so they end with exit 2 before any work; their own checks
(:func:`market.cli.viz_cmd.host_address`, :func:`market.cli.bench_cmd.sections`)
are fuzzed directly.

The number of examples is bounded and the draws derandomized, so the file
runs in seconds and fails the same way every time.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from market.cli import build_parser, main

FUZZ = settings(max_examples=20, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: numbers and near-numbers: out of every range, huge, negative, not finite, not numbers
NUMBERS = ["-1", "0", "1", "2", "3", "16", "2.5", "1e308", "-1e308", "1e3", "0x10", " 3",
           "99999999999999999999999", "nan", "inf", "-inf", "1001", "2000001", "", "x"]
#: text where names, specs, mixes, ranges and lists go
TEXT = ["", " ", ",", ",,", "=", "a=b", "x", "averaging", "qlearning", "qlearning:",
        "qlearning:=1", "spe:", "bogus", "zi-c:3", "averaging=0.5,bogus=0.5", "averaging=nan",
        "averaging=-1,zi-c=2", "averaging=1e308", "-5,5", "5,-5", "1e308,1.7e308",
        "-1e308,1e308", "0,5e-324", "nan,1", "1,1", "0,1", "a,b", "1-3", "3-1", "0-0",
        "1-99999999999999999999999", "h\u00e9llo", "a\x00b", "negmas:Nope", "genius:Nope"]
#: what --param takes: NAME=V1,V2,...
PARAMS = ["n_buyers=99999999999999999999999", "n_buyers=1000000000", "prices=1000000",
          "rounds=0", "clock_buckets=-1", "clock_buckets=1000000000", "nope=1", "=", "n_buyers=",
          "value_range=1", "seed=3", "rng=1", "buyer_mix=1", "buyer_mix.qlearning=2",
          "buyer_mix.zi-c=0.5", "buyer_mix.bogus=0.5", "buyer_mix.qlearning:=0.5",
          "rounds=3", "period=1,2", "clock=true", "clock=maybe", "first=bogus", "n_buyers=nan",
          "n_buyers=inf", "n_buyers=2.5", "teams=0", "teams=3", "agent_data=step",
          "clock_parts=wait", "clock_parts=bogus",
          "n_buyers=" + ",".join(str(i) for i in range(1, 400))]
#: output paths, relative to the example's own folder (never the fixtures)
OUTPUTS = ["out", "out/x.npz", "out/f.png", "out/r.parquet", "out/deep/er/r.parquet", "dir",
           "dir/", "file.txt", "file.txt/x.parquet", "", ".", "/proc/x/r.parquet", "a\x00b"]
#: options whose valid values are slow (pools, clusters, long runs): only cheap or bad values
OVERRIDES = {
    ("batch", "--processes"): ["0", "-1", "1", "x", "", "4097", "nan"],
    ("batch", "--scheduler"): ["", "x:y:z", "127.0.0.1:1", "tcp://", "::"],
    ("batch", "--connect-timeout"): ["0", "0.1", "0.05", "inf", "nan", "-1", "1e308", "x", ""],
    ("batch", "--param"): PARAMS,
    ("tournament", "--genius"): ["0", "-1", "x", "", ",", "AgentK,AgentK", "NoSuchAgent",
                                 "99999", "1e3"],
}
#: each command's base line, valid and quick; the fuzzed options are added after it
BASE = {
    "baseline": [],
    "train": ["--cycles", "1", "--episodes", "5", "--test-episodes", "5", "--no-tables"],
    "evaluate": ["{good}"],
    "market": ["--buyers", "4", "--sellers", "4", "--steps", "2", "--out", "out"],
    "tournament": ["--strategies", "averaging,hardliner", "--repetitions", "2",
                   "--qtable", "{good}", "--out", "out"],
    "batch": ["--param", "n_buyers=3", "--param", "n_sellers=3", "--iterations", "1",
              "--steps", "2", "--processes", "1", "--connect-timeout", "0.1",
              "--out", "out/r.parquet"],
    "plot": ["{results}", "--out", "out"],
    "viz": [],
    "bench": [],
}
#: the options that name files to read, and those that name files or folders to write
INPUTS = {"--load", "--qtable", "--grid", "file", "results"}
WRITES = {"--out", "--save", "--plot"}
#: an invalid option that ends the line in argparse, after the fuzzed ones
COMPANION = {"viz": (["--port", "1"], ["--host", ""]), "bench": (["--repeats", "0"],) * 2}
RUNS = ["baseline", "train", "evaluate", "market", "tournament", "batch", "plot"]


# --- the files the values may name ----------------------------------------------------------
@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> dict[str, str]:
    """Table files (good, of another game, damaged, lying, nested), results tables, grids."""
    from market.game import qtable
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    d = tmp_path_factory.mktemp("fuzz-fixtures")

    def zeros(p: Protocol) -> np.ndarray:
        return np.zeros((2, qtable.n_rows(p), p.n_actions))

    def npz(name: str, **arrays: np.ndarray) -> None:
        with open(d / name, "wb") as fh:
            np.savez(fh, **arrays)

    five, seven = Protocol(5, 5), Protocol(7, 5)
    save_tables(d / "good.npz", TablePair(five, zeros(five), zeros(five)))
    save_tables(d / "p7.npz", TablePair(seven, zeros(seven), zeros(seven)))
    sizes = {"prices": np.int64(5), "rounds": np.int64(5)}
    npz("deep.npz", seller=zeros(five), buyer=zeros(five), **sizes,
        meta=np.str_("[" * 5000 + "]" * 5000))
    npz("mixed.npz", seller=zeros(five), buyer=zeros(five)[0], **sizes, meta=np.str_("{}"))
    npz("extra.npz", seller=zeros(five), buyer=zeros(five), **sizes, x=np.zeros(3))
    npz("objects.npz", seller=np.array([None, 1], dtype=object), buyer=zeros(five), **sizes)
    (d / "text.npz").write_text("hello, not a zip archive\n")
    results = pd.DataFrame({"run": [0, 1, 2, 3], "point": [0, 0, 1, 1], "iteration": [0, 1] * 2,
                            "seed": [1, 2, 3, 4], "steps": [2] * 4, "n_buyers": [3, 3, 4, 4],
                            "efficiency": [0.5, 0.6, 0.7, 0.8], "mean_price": [50.0, 51, 52, 53],
                            "earnings.buyer.averaging": [1.0, 2, 3, 4], "error": [None] * 4})
    results.attrs["batch"] = {"params": ["n_buyers"],
                              "metrics": ["efficiency", "mean_price", "earnings.buyer.averaging"]}
    results.to_parquet(d / "results.parquet", index=False)
    for name, meta in (("meta_list", ["n_buyers"]), ("meta_int", {"params": 5})):
        bad = results.copy()
        bad.attrs["batch"] = meta
        bad.to_parquet(d / f"{name}.parquet", index=False)
    nulls = results.astype({"n_buyers": "float64"})
    nulls.loc[0, "n_buyers"] = np.nan
    nulls.attrs = results.attrs
    nulls.to_parquet(d / "nulls.parquet", index=False)
    (d / "grid.toml").write_text("n_buyers = [3]\nn_sellers = [3]\n")
    (d / "bad.toml").write_text("n_buyers = [3,\n")
    (d / "huge.toml").write_text("".join(f"{k} = {list(range(2, 102))}\n"
                                         for k in ("n_buyers", "n_sellers", "prices", "rounds",
                                                   "period")))
    (d / "folder").mkdir()
    return {p.stem if p.is_file() else p.name: str(p) for p in d.iterdir()} | {
        "missing": str(d / "missing.npz")}


# --- drawing a command line -----------------------------------------------------------------
@functools.cache
def options(command: str) -> dict[str, argparse.Action]:
    """The command's options and positionals (by their first name), from its parser."""
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    out = {}
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        out[action.option_strings[0] if action.option_strings else action.dest] = action
    return out


def numbers() -> st.SearchStrategy[str]:
    """Integers that are either tiny (cheap when valid) or beyond every cap, and any float."""
    ints = st.one_of(st.integers(-10**30, -1), st.integers(0, 16), st.integers(10**10, 10**30))
    return st.one_of(ints.map(str), st.floats().map(repr), st.floats().map(lambda f: f"{f:g}"))


def values(command: str, name: str, action: argparse.Action,
           files: dict[str, str]) -> st.SearchStrategy[str]:
    inputs = [*files.values(), "missing.npz", "dir", "file.txt", ""]
    if (command, name) in OVERRIDES:
        return st.sampled_from(OVERRIDES[command, name])
    if name in WRITES:
        return st.sampled_from(OUTPUTS)
    if name in INPUTS:
        return st.one_of(st.sampled_from(inputs), st.text(max_size=6))
    if action.choices:
        return st.sampled_from([*map(str, action.choices), "", "x", "RANDOM"])
    if command == "tournament" and name in ("--seller-range", "--buyer-range"):
        return st.sampled_from(TEXT)
    if name in ("--buyer-mix", "--seller-mix", "--buyer", "--seller", "--strategies", "--fill",
                "--value-range", "--cost-range", "--only", "--host"):
        spec_files = [f"qlearning:{files[k]}" for k in ("good", "p7", "text", "deep", "mixed")]
        mixes = [f"{s}=0.5,averaging=0.5" for s in spec_files]
        return st.one_of(st.sampled_from(TEXT + spec_files + mixes), st.text(max_size=8))
    return st.one_of(st.sampled_from(NUMBERS), numbers(), st.text(max_size=6))


def command_line(data: st.DataObject, command: str, files: dict[str, str]) -> list[str]:
    found = options(command)
    names = sorted(found)
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True),
                       label="options")
    argv = [command, *(a.format(**files) for a in BASE[command])]
    for name in chosen:
        action = found[name]
        if not action.option_strings:  # a positional: replace the base's
            value = data.draw(values(command, name, action, files), label=name)
            base = [a for a in BASE[command] if a.startswith("{")]
            if base:
                argv[argv.index(base[0].format(**files))] = value
            else:
                argv.append(value)
        elif action.nargs == 0:  # a flag
            argv.append(name)
        else:
            value = data.draw(values(command, name, action, files), label=name)
            glued = data.draw(st.booleans(), label="--opt=value")
            argv += [f"{name}={value}"] if glued else [name, value]
    if command in COMPANION:
        ports = "--port" in chosen
        argv += COMPANION[command][1 if ports else 0]
    return argv


# --- running one ----------------------------------------------------------------------------
@contextlib.contextmanager
def own_folder(root: Path) -> Iterator[Path]:
    """An empty folder (with a sub-folder and a file to be named) as the current directory."""
    here = Path(tempfile.mkdtemp(dir=root))
    (here / "dir").mkdir()
    (here / "file.txt").write_text("a file, not a folder\n")
    cwd = os.getcwd()
    os.chdir(here)
    try:
        yield here
    finally:
        os.chdir(cwd)
        shutil.rmtree(here, ignore_errors=True)


def contents(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run(argv: list[str]) -> tuple[int, str, str, list[warnings.WarningMessage]]:
    out, err = io.StringIO(), io.StringIO()
    with (warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out),
          contextlib.redirect_stderr(err)):
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own errors and --help
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue(), caught


def check_contract(argv: list[str], folder: Path) -> None:
    before = contents(folder)
    code, out, err, caught = run(argv)
    note = f"run.py {' '.join(map(repr, argv))}\nexit {code}\nstderr: {err}"
    assert code in (0, 2), note
    assert "Traceback" not in err, note
    numeric = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not numeric, f"{note}\nwarnings: {numeric}"
    if code == 2:
        assert len(err.strip().splitlines()) <= 1, note
        assert contents(folder) == before, f"{note}\nleft behind: {contents(folder) - before}"
    elif "--json" in argv:
        json.loads(out)


@pytest.mark.parametrize("command", RUNS)
@FUZZ
@given(data=st.data())
def test_every_option_of_every_command_keeps_the_contract(command, data, fixtures,
                                                          tmp_path_factory):
    argv = command_line(data, command, fixtures)
    with own_folder(tmp_path_factory.getbasetemp()) as folder:
        check_contract(argv, folder)


@pytest.mark.parametrize("command", sorted(COMPANION))
@FUZZ
@given(data=st.data())
def test_serving_and_benchmarking_commands_parse_every_option(command, data, fixtures,
                                                               tmp_path_factory):
    argv = command_line(data, command, fixtures)
    with own_folder(tmp_path_factory.getbasetemp()) as folder:
        before = contents(folder)
        code, _, err, _ = run(argv)
        assert code == 2 and len(err.strip().splitlines()) == 1, (argv, err)
        assert "Traceback" not in err and contents(folder) == before


@FUZZ
@given(text=st.one_of(st.sampled_from(TEXT + ["127.0.0.1", "::1", "0.0.0.0", "localhost"]),
                      st.text(max_size=12)))
def test_the_viz_host_and_the_bench_sections_are_checked(text):
    from market.bench import SECTIONS
    from market.cli.bench_cmd import sections
    from market.cli.viz_cmd import host_address, is_loopback
    from market.errors import UsageError

    try:
        host = host_address(text)
    except argparse.ArgumentTypeError as exc:
        assert "--host" in str(exc) and not text.strip()
    else:
        assert host == text.strip() and host
        assert isinstance(is_loopback(host), bool)
    try:
        names = sections(text)
    except UsageError as exc:
        assert "--only" in str(exc) and "\n" not in str(exc)
    else:
        assert names and set(names) <= set(SECTIONS)
