"""A user's rule that fails, at load, compile or run time, on either engine and in every
command: one line naming the strategy and what went wrong, exit 2, never a traceback."""

from __future__ import annotations

import os

import pytest

from tests.support.cli_run import run

RULES = '''
import random

import numpy as np

from strategies.base import Classifier
from strategies.rule_based import RuleBased


def helper(x):
    return {"a": x}["a"]


class Dicty(RuleBased):
    """Calls a plain Python helper: numba cannot compile it; Python can."""

    name = "dicty"

    @staticmethod
    def target(turn, rng):
        return helper(turn.lo)


class Loops(RuleBased):
    name = "loops-at-once"

    @staticmethod
    def target(turn, rng):
        k = turn.lo
        while k >= 0:
            k = (k * 7 + 3) % 1000
        return k


class Negative(RuleBased):
    name = "negative"

    @staticmethod
    def target(turn, rng):
        return -5


class OffAtSeven(RuleBased):
    """On the grid in every game its contract's samples try; off it at P = 7 only."""

    name = "off-at-seven"

    @staticmethod
    def target(turn, rng):
        if turn.prices == 7:
            return turn.prices + 1
        return (turn.lo + turn.hi) // 2


class TooHigh(RuleBased):
    """Offers past its own range: a promised-rational Buyer paying more than its value."""

    name = "too-high"

    @staticmethod
    def target(turn, rng):
        return min(turn.hi + 10, turn.prices)


class TakesAnything(RuleBased):
    name = "takes-anything"

    @staticmethod
    def target(turn, rng):
        return turn.lo if turn.side == 0 else turn.hi

    @staticmethod
    def accepts(turn, target):
        return turn.offer > 0


class HonestlyGreedy(TakesAnything):
    """The same rule as TakesAnything, but it says so: it plays."""

    name = "honestly-greedy"
    classifier = Classifier(individually_rational=False)


class NpDrawer(RuleBased):
    name = "np-drawer"
    classifier = Classifier(stochastic=True)

    @staticmethod
    def target(turn, rng):
        return turn.lo + int(np.random.random() * (turn.hi - turn.lo))


class PyDrawer(RuleBased):
    name = "py-drawer"
    classifier = Classifier(stochastic=True)

    @staticmethod
    def target(turn, rng):
        return turn.lo + int(random.random() * (turn.hi - turn.lo))


class Broken(RuleBased):
    name = "broken-rule"

    @staticmethod
    def target(turn, rng):
        if turn.move >= 0:
            raise ValueError("my rule broke")
        return turn.lo


class NotALevel(RuleBased):
    name = "not-a-level"

    @staticmethod
    def target(turn, rng):
        return float("nan")


class LateDivider(RuleBased):
    """Fine at the opening; divides by zero from its third move on, inside the engine."""

    name = "late-divider"

    @staticmethod
    def target(turn, rng):
        if turn.move >= 2:
            return turn.lo // (turn.move - turn.move)
        return turn.hi
'''


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rules")
    (folder / "failing.py").write_text(RULES)
    os.symlink(folder / "b.py", folder / "a.py")
    os.symlink(folder / "a.py", folder / "b.py")
    return folder


def _one_line(out, *words: str) -> None:
    lines = [x for x in out.stderr.splitlines() if not x.startswith(("[progress]", "compil"))]
    assert out.returncode == 2, out.stderr
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for word in words:
        assert word in lines[0], out.stderr


def test_a_symlink_loop_named_as_a_rule_file_is_one_line(rules):
    out = run("market", "--seller-mix", f"{rules / 'a.py'}:X=0.5,averaging=0.5", "--steps", "2")
    _one_line(out, "cannot be resolved", "a.py")
    assert "cannot hold ','" not in out.stderr  # not a name cut at a ',' or '='


#: a rule in every command that plays it, on both engines ({r}: the rules' file, {c}: a class)
EVERYWHERE = [
    ["baseline", "--seller", "{r}:{c}"],
    ["market", "--seller-mix", "{r}:{c}=0.5,averaging=0.5", "--steps", "3"],
    ["market", "--engine", "lockstep", "--seller-mix", "{r}:{c}=0.5,averaging=0.5",
     "--steps", "3"],
]


def _everywhere(rules, command: list[str], cls: str):  # noqa: ANN202
    return run(*(a.format(r=rules / "failing.py", c=cls) for a in command))


@pytest.mark.parametrize("command", EVERYWHERE)
def test_a_rule_that_raises_is_named_with_its_error(rules, command):
    out = _everywhere(rules, command, "Broken")
    _one_line(out, "'broken-rule'", "ValueError: my rule broke")


@pytest.mark.parametrize("command", EVERYWHERE)
def test_a_rule_that_returns_no_level_is_named_not_blamed_on_the_machine(rules, command):
    out = _everywhere(rules, command, "NotALevel")
    _one_line(out, "'not-a-level'")
    assert "this machine" not in out.stderr


def test_a_rule_that_raises_inside_the_compiled_engine_is_named(rules):
    """numba hands the rule's exception back from the market's compiled step."""
    out = run("market", "--seller-mix", f"{rules / 'failing.py'}:LateDivider=0.5,averaging=0.5",
              "--steps", "3", "--seed", "1")
    _one_line(out, "'late-divider'", "ZeroDivisionError")


@pytest.mark.parametrize(("cls", "source"), [("NpDrawer", "np.random"), ("PyDrawer", "random")])
@pytest.mark.parametrize("engine", ["auto", "lockstep"])
def test_a_rule_that_draws_outside_its_generator_is_refused(rules, cls, source, engine):
    """numba's np.random (and Python's random) is a generator of its own that no seed
    reaches: the same seed gave different markets."""
    out = run("market", "--engine", engine, "--seller-mix",
              f"{rules / 'failing.py'}:{cls}=0.5,averaging=0.5", "--steps", "3")
    _one_line(out, f"draws from {source}", "the generator it is given")


def test_a_rule_numba_cannot_compile_says_why_once_and_plays_as_python(rules):
    spec = f"{rules / 'failing.py'}:Dicty=0.5,averaging=0.5"
    out = run("market", "--seller-mix", spec, "--steps", "3")
    _one_line(out, "'dicty'", "helper", "--engine lockstep")
    assert "nopython mode pipeline" not in out.stderr  # a stage's name is not a reason
    slow = run("market", "--engine", "lockstep", "--seller-mix", spec, "--steps", "3")
    assert slow.returncode == 0, slow.stderr
    assert slow.stderr.count("compiling dicty's rule") <= 1, slow.stderr  # not once a move


def test_a_rule_file_that_exits_at_import_is_one_line_not_a_silent_success(tmp_path):
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n")
    out = run("market", "--seller-mix", f"{tmp_path / 'exits.py'}:X=0.5,averaging=0.5",
              "--steps", "2")
    _one_line(out, "importing", "SystemExit")


def test_a_rule_that_never_returns_on_the_sample_opening_is_refused_before_it_plays(rules):
    out = run("market", "--seller-mix", f"{rules / 'failing.py'}:Loops=0.5,averaging=0.5",
              "--steps", "2")
    _one_line(out, "'loops-at-once'", "did not return")


def test_a_rule_file_in_a_folder_whose_name_holds_a_colon_is_found(tmp_path):
    """A spec splits the class off at its last ':' (a class name holds none; a folder's
    name may): it said "no file" naming the folder cut at its ':'."""
    folder = tmp_path / "a:b"
    folder.mkdir()
    (folder / "colon_rules.py").write_text(
        "from strategies.rule_based import RuleBased\n\n\nclass Mid(RuleBased):\n"
        "    name = 'colon-mid'\n\n    @staticmethod\n    def target(turn, rng):\n"
        "        return (turn.lo + turn.hi) // 2\n")
    out = run("baseline", "--seller", f"{folder / 'colon_rules.py'}:Mid")
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1].startswith(
        ("DEAL", "NO DEAL")), out.stderr


@pytest.mark.parametrize(("cls", "words"), [
    ("Negative", ["'negative'", "off the grid"]),
    ("TooHigh", ["'too-high'", "individually rational", "offers level"]),
    ("TakesAnything", ["'takes-anything'", "individually rational", "accepts level"]),
])
def test_a_rule_that_breaks_its_promises_is_refused_before_it_plays(rules, cls, words):
    """Its traders traded at a loss (or its target was clamped onto the grid) unnoticed,
    though its classifier (the default) says it never does."""
    side = "--buyer" if cls == "TooHigh" else "--seller"
    out = run("baseline", side, f"{rules / 'failing.py'}:{cls}")
    _one_line(out, *words)


@pytest.mark.parametrize("how", [("--engine", "auto"), ("--engine", "lockstep"),
                                 ("--institution", "cda")])
def test_a_rule_off_the_grid_in_a_game_its_samples_missed_is_refused_not_clamped(rules, how):
    """Clamped onto the grid, its promised-rational Buyers paid the top price, above their
    values (earnings -297); now the engine refuses the step in one line naming the rule."""
    out = run("market", *how, "--buyer-mix", f"{rules / 'failing.py'}:OffAtSeven=0.5,"
              "averaging=0.5", "--prices", "7", "--steps", "3", "--seed", "1")
    _one_line(out, "'off-at-seven'", "off the grid")


def test_a_rule_that_says_it_may_trade_at_a_loss_plays(rules):
    out = run("baseline", "--seller", f"{rules / 'failing.py'}:HonestlyGreedy")
    assert out.returncode == 0, out.stderr
