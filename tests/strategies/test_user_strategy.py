"""A user's strategy, written once in a file of their own, runs compiled like a built-in.

The documentation's example (docs/pages/strategies.md) is extracted and run
in a market on both engines (identical tables); an edited rule is compiled
anew (never played from a stale cache); a rule numba cannot compile ends in
one line naming it, and still runs on the lockstep path; an unknown kind
plays no other strategy's rule.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import strategies
from market import compiled_game
from market.compiled import build
from market.errors import CompileError
from market.game import buffers
from market.game.pressure import Pressure
from market.sim import engine
from market.sim.model import MarketModel
from strategies import compiled, specs
from strategies.stores import stores

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "pages" / "strategies.md"


def _doc_module() -> str:
    text = DOC.read_text()
    return re.search(r"```python\n(# file: my_rules\.py\n.*?)```", text, re.S).group(1)


def test_the_documented_user_strategy_plays_alike_on_both_engines(tmp_path):
    path = tmp_path / "my_rules.py"
    path.write_text(_doc_module())
    spec = f"{path}:Midpoint"
    try:
        kw = dict(n_sellers=30, n_buyers=30, seller_mix={spec: 0.5, "averaging": 0.5},
                  buyer_mix={"qlearning": 0.5, spec: 0.5}, period=4, seed=3)
        a, b = MarketModel(engine="compiled", **kw), MarketModel(engine="lockstep", **kw)
        assert isinstance(a.engine, engine.CompiledEngine)
        for _ in range(12):
            a.step()
            b.step()
        for frame, fa in a.datacollector.frames().items():
            assert fa.equals(b.datacollector.frames()[frame]), frame
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
        assert a.datacollector.get_model_vars_dataframe()["deals"].sum() > 0
    finally:
        strategies.STRATEGIES.pop("midpoint", None)


SCRIPT = """
import numpy as np
from market.game.protocol import Side, negotiate
from market.game.rules import Protocol
import strategies
from strategies import specs
p = Protocol(9, 3)
s = specs.build(r"{spec}", "seller", p)
b = strategies.make("hardliner", "buyer", 1, p)
rec = negotiate(p, Side.single(s, 1, 1, 9), Side.single(b, 1, 1, 9), 0, np.random.default_rng(0))
print(int(rec.actions[0, 0]) + 1)
"""


@pytest.mark.parametrize("place", ["default", "read-only"])
def test_an_edited_rule_is_compiled_anew_never_played_stale(place, tmp_path, request):
    """Wherever numba keeps its cache: our cache folder, or numba's user folder when the
    package and the rule's folder are read-only. (Under ``NUMBA_CACHE_DIR``: the kernel-edit
    test in tests/game/test_kernel.py; every placement on small modules:
    tests/compiled/test_build.py.)"""
    rules = tmp_path / "rules"
    rules.mkdir()
    path = rules / "edited.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "user"),
           # the rule's generated module in this machine's cache (numba's user folder aside)
           "NEGOTIATION_MARKET_CACHE": str(build.root())}
    env.pop("NUMBA_CACHE_DIR", None)
    cmd = [sys.executable, "-c", SCRIPT.format(spec=f"{path}:Midpoint")]
    if place == "read-only":
        cmd = request.getfixturevalue("read_only")(cmd, ROOT, rules)
    opening = []
    for level in (3, 7):  # the rule's opening offer, edited between two runs
        path.write_text(_doc_module().replace("return (lo + hi) // 2",
                                                            f"return max(lo, min(hi, {level}))"))
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        opening.append(int(out.stdout.split()[-1]))
    assert opening == [3, 7]


BAD = '''
from strategies.rule_based import RuleBased


class Wordy(RuleBased):
    name = "wordy"

    @staticmethod
    def target(turn, rng):
        import math  # fine in Python; numba compiles no import inside a function

        return math.floor((turn.lo + turn.hi) / 2)
'''


def test_a_rule_numba_cannot_compile_is_refused_in_one_line_and_runs_lockstep(tmp_path):
    (tmp_path / "wordy.py").write_text(BAD)
    cmd = [sys.executable, str(ROOT / "run.py"), "market", "--seller-mix", "wordy.py:Wordy",
           "--steps", "2", "--sellers", "4", "--buyers", "4"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the built-ins' engine as compiled
    bad = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    lines = [x for x in bad.stderr.splitlines() if x.startswith("run.py market: error")]
    assert len(lines) == 1 and "Traceback" not in bad.stderr
    assert "'wordy'" in lines[0] and "--engine lockstep" in lines[0]
    ok = subprocess.run([*cmd, "--engine", "lockstep"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr


def test_an_unknown_kind_plays_an_illegal_action_not_another_rule():
    """Both switches: a rule's own module (already compiled for the lockstep path) and the
    engine's, which calls each kind's module by number."""
    averaging = strategies.make("averaging", "seller")
    module = compiled.batch_module(compiled.form(type(averaging)))
    n = 3
    store, _ = stores([averaging.kernel_state()])
    i = np.zeros(n, np.int64)
    table = (np.zeros((2, n), np.int64), np.zeros((2, n), np.int64), i.copy())
    seat = (np.ones(n, np.int64), np.full(n, 5, np.int64), i.copy(), np.full(n, -1, np.int64),
            i.copy(), buffers.no_book())
    out = np.zeros(n, np.int64)
    module.decide(len(module.FORMS) + 5, 0, 0, (5, 5), np.arange(n), table, seat,
                  store.arrays, 0, np.random.default_rng(0), out)
    assert (out == -1).all()
    eng = compiled_game.compiled_module(())  # the two-agent game's loops
    for kind in (len(eng.FORMS), -1):
        kinds = np.full(2, kind, np.int64)
        seats = (i.copy(), i.copy(), np.ones(n, np.int64), np.full(n, 5, np.int64))
        two, _ = stores([averaging.kernel_state(), averaging.kernel_state()])
        *_, bad, bad_g = eng.negotiate_rows((5, 5), i.copy(), seats, seats,
                                            np.full(n, -1, np.int64), i.copy(), kinds, 1,
                                            two.arrays,
                                            np.random.default_rng(0), Pressure())
        assert (bad, bad_g) == (0, 0)  # the opening Seller's population, at move 0


DRAWS = '''
from strategies.rule_based import RuleBased, bounds


class Secretly(RuleBased):
    name = "secretly"  # draws, but its classifier keeps the default: deterministic

    @staticmethod
    def target(turn, rng):
        lo, hi = bounds(turn)
        return lo if rng.random() < 0.5 else hi
'''


def test_a_rule_that_draws_without_saying_so_is_refused_naming_the_classifier(tmp_path):
    (tmp_path / "secretly.py").write_text(DRAWS)
    cls = specs.parse(f"{tmp_path / 'secretly.py'}:Secretly", "--seller").cls
    with pytest.raises(CompileError, match=r"'secretly': its rule draws .*stochastic=True"):
        engine.compiled_module([cls()])


@pytest.mark.parametrize("spec, words", [
    ("nowhere.py:X", "no file"), ("json.decoder:JSONDecoder", "no Strategy class"),
    ("no_such_module_xyz.sub:X", "cannot import module"),
])
def test_bad_user_specs_are_refused_naming_the_problem(spec, words):
    with pytest.raises(ValueError, match=words):
        specs.parse(spec, "--seller")


def test_classes_sharing_a_rule_share_one_generated_module_whatever_their_names():
    """Boulware and Conceder differ only in a parameter: one form, one file (a digest that
    depended on which name came first would compile a second engine in some processes)."""
    boulware, conceder = (compiled.form(strategies.STRATEGIES[n]) for n in ("boulware",
                                                                            "conceder"))
    assert boulware.key == conceder.key and boulware.name != conceder.name
    assert compiled._source([boulware])[0] == compiled._source([conceder])[0]


def test_a_new_rule_compiles_once_said_by_name_and_is_loaded_after(tmp_path):
    """The first market holding a rule never seen before (a file of new content) says what
    compiles, naming the rule, and how long it took; the next run is silent."""
    import uuid

    from cli_run import run

    path = tmp_path / "fresh.py"
    path.write_text(_doc_module() + f"\n# a rule of new content: {uuid.uuid4()}\n")
    cmd = ("market", "--seller-mix", f"{path}:Midpoint=0.5,averaging=0.5", "--steps", "2",
           "--sellers", "4", "--buyers", "4")
    try:
        first, again = run(*cmd, cwd=tmp_path), run(*cmd, cwd=tmp_path)
    finally:
        strategies.STRATEGIES.pop("midpoint", None)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    said = first.stderr.splitlines()
    assert ("compiling the market engine for bilateral pairs with midpoint (kept for later "
            "runs; about 10 seconds)") in said
    assert any(re.fullmatch(r"compiled the market engine for bilateral pairs in \d+ s", line)
               for line in said)
    assert "compil" not in again.stderr


def test_a_classifier_given_as_a_dict_needs_only_its_differences():
    """The docstring's promise: ``{"stochastic": True}`` is a classifier (its sides the
    default, both), and a key that is no property is refused naming it."""
    from strategies.base import Classifier, Strategy

    class Differs(Strategy):
        name = "differs"
        classifier = {"stochastic": True}

    assert isinstance(Differs.classifier, Classifier) and Differs.classifier["stochastic"]
    Differs(side="buyer")  # used to be KeyError: 'sides'
    with pytest.raises(TypeError, match="'sids', which is none of"):
        class Typo(Strategy):
            classifier = {"sids": ("seller",)}


def test_a_rule_based_class_with_no_target_is_refused_in_one_line(tmp_path):
    (tmp_path / "notarget.py").write_text(
        "from strategies.rule_based import RuleBased\n\n\n"
        "class NoTarget(RuleBased):\n    name = 'notarget'\n")
    r = subprocess.run([sys.executable, "run.py", "baseline", "--seller",
                        f"{tmp_path / 'notarget.py'}:NoTarget"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "states no rule" in r.stderr


CONST_RULE = '''
from consts import LEVEL
from strategies.rule_based import RuleBased


class Constant(RuleBased):
    name = "constant-level"

    @staticmethod
    def target(turn, rng):
        return max(turn.lo, min(turn.hi, LEVEL))
'''


def test_a_constant_the_rule_imports_is_compiled_in_and_an_edit_to_it_plays(tmp_path):
    """numba compiles a global's value into the code: editing the module it comes from
    (not the rule's file) must name another compiled module, never replay the old value."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "const_rule.py").write_text(CONST_RULE)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{rules}",
           "NEGOTIATION_MARKET_CACHE": str(build.root())}
    env.pop("NUMBA_CACHE_DIR", None)
    cmd = [sys.executable, "-c", SCRIPT.format(spec=f"{rules / 'const_rule.py'}:Constant")]
    opening = []
    for level in (3, 7, 3):
        (rules / "consts.py").write_text(f"LEVEL = {level}\n")
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        opening.append(int(out.stdout.split()[-1]))
    assert opening == [3, 7, 3]


def test_an_edited_rule_plays_its_new_text_in_the_same_process(tmp_path):
    """The Python API and the view build markets in one process: a rule file edited between
    two builds plays its new text."""
    from market.game.protocol import Side, negotiate
    from market.game.rules import Protocol

    path = tmp_path / "edited_here.py"
    p = Protocol(9, 3)
    buyer = strategies.make("hardliner", "buyer", 1, p)
    opening = []
    for level in (3, 7):
        path.write_text(_doc_module().replace("return (lo + hi) // 2",
                                                            f"return max(lo, min(hi, {level}))")
                        .replace('name = "midpoint"', 'name = "midpoint-edited-here"'))
        seller = specs.build(f"{path}:Midpoint", "seller", p)
        rec = negotiate(p, Side.single(seller, 1, 1, 9), Side.single(buyer, 1, 1, 9), 0,
                        np.random.default_rng(0))
        opening.append(int(rec.actions[0, 0]) + 1)
    assert opening == [3, 7]


def test_a_users_strategy_is_labelled_by_its_name_not_its_files_path(tmp_path):
    """Tables and heatmaps read `midpoint-labelled`, not `/long/path/my_rules.py:Midpoint`."""
    from market.cli import market_cmd
    from market.game.rules import Protocol
    from market.runs import tournament

    path = tmp_path / "my_rules.py"
    path.write_text(_doc_module().replace('name = "midpoint"', 'name = "midpoint-labelled"'))
    spec = f"{path}:Midpoint"
    entrants = tournament.registry_entrants(Protocol(), [spec, "averaging"])
    assert [e.name for e in entrants] == ["midpoint-labelled", "averaging"]
    model = MarketModel(n_sellers=4, n_buyers=4, seller_mix={spec: 0.5, "averaging": 0.5},
                        engine="lockstep", seed=1)
    model.step()
    rows = market_cmd._strategy_table(model)
    assert {r["strategy"] for r in rows} == {"midpoint-labelled", "averaging"}


def test_a_mix_of_a_thousand_rules_is_said_in_one_short_line_in_minutes():
    """It said "a few seconds" and named all 1,000; each rule of a user's costs about 1.5 s
    more (measured: 1 rule 11 s, 32 rules 58 s)."""
    from market.compiled_game import compiling_words

    line = compiling_words([f"rule{i}" for i in range(1000)], False, True,
                           "the market engine for bilateral pairs")
    assert line == ("compiling the market engine for bilateral pairs with rule0, rule1, rule2 "
                    "and 997 more (kept for later runs; about 25 minutes)")
