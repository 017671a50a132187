"""Market parameters: one check for the model, the market command and the batch; caps; mixes."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from market.errors import UsageError
from market.game import qtable
from market.limits import PRICES_MAX, TABLE_CELLS_MAX, TRADERS_MAX
from market.sim import params, signature
from market.sim.declared import BY_NAME, NAMES
from market.sim.model import MarketModel


def test_params_has_one_field_per_declared_parameter_in_order_with_its_default():
    """``Params`` is written in the source (tools and the API reference see its fields); it
    cannot drift from the declarations."""
    fields = dataclasses.fields(params.Params)
    assert [f.name for f in fields] == list(NAMES)
    assert [f.default for f in fields] == [BY_NAME[n].default for n in NAMES]
    assert params.check({}) == params.Params(**{**params.Params().kwargs(), "buyer_mix": {
        "averaging": 1.0}, "seller_mix": {"averaging": 1.0}, "clock_buckets": 4,
        "strategy_params": {}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"buyer_mix": {"averaging": 0.6}}, "sum to 1"),
        ({"seller_mix": {"nope": 1.0}}, "unknown strategy"),
        ({"n_buyers": 0}, "n_buyers"),
        ({"n_sellers": -2}, "n_sellers"),
        ({"buyer_mix": {"averaging": 1.5, "qlearning": -0.5}}, ">= 0"),
        ({"period": 0}, "period"),
        ({"value_range": (5, 5)}, "value_range"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MarketModel(**kwargs)
    with pytest.raises(ValueError, match=message):  # the same check, without a model
        params.check(kwargs)


def test_check_fills_defaults_and_normalises():
    p = params.check({"buyer_mix": {"averaging": 0.5, "zi-c": 0.5, "hardliner": 0},
                      "value_range": (10, 20), "period": 3, "clock": 1})
    assert p.buyer_mix == {"averaging": 0.5, "zi-c": 0.5}  # zero shares dropped
    assert p.seller_mix == {"averaging": 1.0}  # the default mix
    assert p.value_range == (10.0, 20.0) and isinstance(p.value_range[0], float)
    assert p.clock is True and p.clock_buckets == 3  # min(period, 4)
    assert p.n_buyers == 50 and p.protocol.prices == 5
    assert params.check(p.kwargs()) == p  # checking checked parameters changes nothing
    with pytest.raises(ValueError, match="unknown market parameter 'n_agents'"):
        params.check({"n_agents": 5})


def test_messages_use_the_callers_names_for_parameters():
    names = {"buyer_mix": "--buyer-mix", "prices": "--prices", "rounds": "--rounds"}
    with pytest.raises(ValueError, match="^--buyer-mix: shares must sum to 1 \\(got 2\\)$"):
        params.check({"buyer_mix": {"qlearning": 2}}, names)
    with pytest.raises(UsageError, match="memory.*--prices/--rounds"):
        params.check({"n_buyers": 1_000_000, "buyer_mix": {"qlearning": 1}, "prices": 40,
                      "rounds": 40}, names)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_buyers": TRADERS_MAX + 1}, f"n_buyers must be an integer in \\[1, {TRADERS_MAX}\\]"),
    ({"teams": TRADERS_MAX + 1}, "teams must be an integer in"),
    ({"prices": PRICES_MAX + 1}, f"prices must be an integer in \\[2, {PRICES_MAX}\\]"),
    ({"period": 10**9}, "period must be an integer in"),
    ({"buyer_mix": {"qlearning": 1}, "n_buyers": 1_000_000, "prices": 300, "rounds": 20},
     "would need about .* GiB of memory"),
])
def test_sizes_beyond_the_caps_are_refused_before_anything_is_built(kwargs, message):
    with pytest.raises(ValueError, match=message):
        params.check(kwargs)
    with pytest.raises(ValueError, match=message):
        MarketModel(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"n_buyers": 10, "n_sellers": 6, "buyer_mix": {"qlearning": 0.5, "averaging": 0.5},
     "seller_mix": {"qlearning": 1}, "clock": True, "period": 3},
    {"n_buyers": 7, "n_sellers": 6, "buyer_mix": {"qlearning": 1}, "prices": 4, "rounds": 3},
    {"n_buyers": 7, "n_sellers": 6, "buyer_mix": {"qlearning": 1}, "rational_learners": False},
])
def test_the_table_estimate_is_what_the_learners_allocate(kwargs):
    model = MarketModel(**kwargs, seed=0)
    tables = [s.tables for side in (0, 1) for s in model.market.strategies[side]
              if s.name == "qlearning"]
    assert sum(t.size for t in tables) == params.table_cells(model.params)
    assert params.table_cells(model.params) < TABLE_CELLS_MAX


def test_the_declaration_is_the_models_signature():
    """Tools that sweep parameters read :class:`Params`; the model takes exactly those."""
    assert signature.model_parameters() == signature.model_parameters(MarketModel)
    declared = signature.model_parameters()
    assert declared["n_buyers"] == ((int,), 50) and declared["teams"] == ((int,), None)
    assert declared["value_dist"] == ((str,), "uniform")  # a name, or a function: not sweepable
    assert declared["buyer_mix"][0] is None and declared["value_range"][0] is None


def test_mix_and_range_text():
    assert params.parse_mix("averaging=0.25, qlearning=0.75", "--m") == {
        "averaging": 0.25, "qlearning": 0.75}
    assert params.parse_mix("zi-c", "--m") == {"zi-c": 1.0}
    assert params.parse_mix("", "--m") == {}
    with pytest.raises(UsageError, match="--m: strategy 'a' is named twice"):
        params.parse_mix("a=0.5,a=0.5", "--m")
    with pytest.raises(UsageError, match="--m: share of 'a' must be a number"):
        params.parse_mix("a=x", "--m")
    assert params.parse_range("1,2.5", "--r") == (1.0, 2.5)
    for bad in ("9,3", "1", "a,b", "0,inf"):
        with pytest.raises(UsageError, match="--r must be two"):
            params.parse_range(bad, "--r")


def test_shares_a_hair_off_one_are_normalised():
    mix = params.check_mix("buyer_mix", {"averaging": 0.6000004, "zi-c": 0.4})
    assert math.isclose(sum(mix.values()), 1.0, abs_tol=1e-15)
    assert np.isclose(mix["averaging"], 0.6000004 / 1.0000004)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"clock": True, "clock_buckets": -1},
     "clock_buckets must be an integer in \\[1, \\d+\\] \\(got -1\\)"),
    ({"clock": True, "clock_buckets": 2.5}, "clock_buckets must be an integer"),
    ({"clock": True, "clock_buckets": 10**9}, "clock_buckets must be an integer in \\[1, "),
    ({"value_range": (-1e308, 1e308)}, "value_range must lie within \\[-1e\\+12, 1e\\+12\\]"),
    ({"cost_range": (1e308, 1.7e308)}, "cost_range must lie within"),
    ({"value_range": (0, float("inf"))}, "value_range must be two finite numbers"),
    ({"value_range": "ab"}, "value_range must be two numbers"),
])
def test_buckets_and_money_ranges_are_bounded(kwargs, message):
    with pytest.raises(ValueError, match=message):
        params.check(kwargs)


def test_the_widest_money_range_allowed_runs_without_overflow():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow in the draws or the books would raise
        model = MarketModel(n_buyers=20, n_sellers=20, value_range=(-1e12, 1e12),
                            cost_range=(-1e12, 1e12), seed=1)
        for _ in range(12):
            model.step()
        summary = model.summary()
    assert math.isfinite(summary["efficiency"]) and summary["deals"] > 0


def zero_table(path, prices=5, rounds=5, mixed=False):
    from market.game.rules import Protocol
    from market.game.table_files import TablePair, save_tables

    protocol = Protocol(prices, rounds)
    zeros = np.zeros((2, qtable.n_rows(protocol), protocol.n_actions))
    save_tables(path, TablePair(protocol, zeros, zeros))
    if mixed:  # a role-aware seller beside a document-layout buyer, written by hand
        with open(path, "wb") as fh:
            np.savez(fh, seller=zeros, buyer=zeros[0], prices=np.int64(prices),
                     rounds=np.int64(rounds), meta=np.str_("{}"))
    return path


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_text("not a zip"), "not a .npz Q-table file"),
    (lambda p: zero_table(p, prices=7), "tables are for P=7, T=5 but the game has P=5, T=5"),
    (lambda p: zero_table(p, mixed=True), "different layouts"),
])
def test_a_table_named_in_a_mix_is_read_and_checked_by_the_one_check(tmp_path, make, message):
    bad = tmp_path / "bad.npz"
    make(bad)
    mix = {f"qlearning:{bad}": 0.5, "averaging": 0.5}
    with pytest.raises(UsageError, match=f"^--buyer-mix: {bad}: .*{message}"):
        params.check({"buyer_mix": mix}, {"buyer_mix": "--buyer-mix"})
    good = zero_table(tmp_path / "good.npz")
    p = params.check({"seller_mix": {f"qlearning:{good}": 1.0}})
    assert p.seller_mix == {f"qlearning:{good}": 1.0}
    with pytest.raises(UsageError, match="P=5, T=5 but the game has P=6, T=5"):
        params.check({"seller_mix": {f"qlearning:{good}": 1.0}, "prices": 6})


def test_the_memory_estimate_is_checked_against_the_machine(monkeypatch):
    import market.limits

    big = {"n_buyers": TRADERS_MAX, "n_sellers": TRADERS_MAX, "agent_data": "step"}
    p = params.check(big)  # the model alone fits this machine
    assert params.memory_estimate(p, steps=1000) > 4 * params.memory_estimate(p)
    monkeypatch.setattr(market.limits, "machine_memory", lambda: 8 * 2**30)
    names = {"n_buyers": "--buyers", "n_sellers": "--sellers", "agent_data": "--agent-data"}
    with pytest.raises(UsageError, match=(
            r"^the market over 1,000 steps would need about [\d,.]+ GiB of memory \(at most "
            r"6\.4 GiB, 80% of this machine's 8\.0 GiB\): lower --buyers/--sellers, .*"
            r"record less \(--agent-data\)$")):
        params.check(big, names, steps=1000)


def test_the_memory_estimate_covers_what_a_market_holds(tmp_path):
    """The estimate is an upper bound of what building and running a market allocates,
    tables read from a file counted twice (written, then gathered into the engine's store;
    fresh tables are in memory once, below)."""
    import tracemalloc

    table = zero_table(tmp_path / "t.npz", prices=20, rounds=8)
    kwargs = {"n_buyers": 3000, "n_sellers": 2000,
              "buyer_mix": {f"qlearning:{table}": 0.5, "zi-c": 0.5},
              "prices": 20, "rounds": 8, "period": 4, "agent_data": "step"}
    tracemalloc.start()
    try:
        model = MarketModel(**kwargs, seed=0)
        for _ in range(8):
            model.step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = params.memory_estimate(params.check(kwargs), steps=8)
    assert peak < estimate < 4 * peak


_RESIDENT = """
import sys
from market.sim import params
from market.sim.model import MarketModel

def peak():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024

kw = eval(sys.argv[1])
MarketModel(**{**kw, "n_buyers": 2, "n_sellers": 2}, seed=0).step()  # compiled before
model = MarketModel(**kw, seed=0)
model.run(40)
if kw["agent_data"] == "step":
    model.datacollector.get_agent_vars_dataframe()
print(peak(), params.memory_estimate(params.check(kw), steps=40),
      8 * params.table_cells(params.check(kw)))
"""

#: markets whose peak resident memory the estimate must hold: learners' fresh tables (zero
#: pages the system gives only when written, so gathered into the engine's store they are in
#: memory once), agent records every step, clocked learners (their fresh tables repeated
#: into a slot per bucket, every page written) and a subgame-perfect player's solve beside
#: learners
PEAKS = {
    "fresh learners' tables": dict(n_buyers=3000, n_sellers=60000,
                                   buyer_mix={"qlearning": 1.0}, prices=40, rounds=10,
                                   period=4, agent_data="none"),
    "agent data every step": dict(n_buyers=40000, n_sellers=40000, agent_data="step"),
    "clocked learners": dict(n_buyers=20000, n_sellers=20000, buyer_mix={"qlearning": 1.0},
                             seller_mix={"qlearning": 1.0}, clock=True, agent_data="none"),
    "spe beside learners": dict(n_buyers=8, n_sellers=2, seller_mix={"spe": 1.0},
                                buyer_mix={"qlearning": 1.0}, prices=200, rounds=40,
                                agent_data="none"),
}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's VmHWM")
@pytest.mark.parametrize("case", PEAKS)
def test_the_memory_estimate_holds_a_fresh_process_s_peak_within_a_fifth(case):
    """What the machine holds, not what was asked of the allocator: a fresh process's peak
    resident memory (40 steps, the engine compiled before) is within 1.2x of the estimate
    either way, and the tables are in it once."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", _RESIDENT,
                           repr(PEAKS[case])], capture_output=True, text=True)
    frames = done.stderr.split("Extension modules")[0]  # a crash's frames, not its modules
    assert done.returncode == 0, (done.returncode, frames[-6000:])
    out = done.stdout.split()
    peak, estimate, tables = (float(x) for x in out)
    assert tables < peak and peak / 1.2 < estimate < 1.2 * peak, (peak, estimate)


def test_a_million_traders_half_learning_are_allowed_when_their_tables_fit():
    """The cap is the memory the tables cost (checked against this machine's), not a count
    of cells: 500,000 learners' tables are about 3 GiB."""
    p = params.check({"n_buyers": 500_000, "n_sellers": 500_000,
                      "buyer_mix": {"qlearning": 0.5, "averaging": 0.5},
                      "seller_mix": {"qlearning": 0.5, "averaging": 0.5}})
    assert params.memory_estimate(p) < 8 * 2**30


def test_the_guide_s_parameters_table_is_the_declarations():
    from pathlib import Path

    from market.sim.declared import markdown_table

    page = (Path(__file__).parents[2] / "docs" / "pages" / "market.md").read_text()
    table = page.split("<!-- parameters:")[1].split("-->", 1)[1].split("<!-- /parameters -->")[0]
    assert table.strip() == markdown_table().strip(), (
        "docs/pages/market.md's table is stale: paste `python -m market.sim.declared` into it")


def test_the_model_s_keywords_are_the_declared_parameters_with_their_defaults():
    """The model's explicit signature (for IDEs and Mesa's batch_run) stays the declaration."""
    import inspect

    from market.sim.declared import PARAMETERS
    from market.sim.model import MarketModel

    sig = inspect.signature(MarketModel.__init__).parameters
    own = [n for n in sig if n not in ("self", "engine", "seed", "rng")]
    assert own == [d.name for d in PARAMETERS]
    assert {n: sig[n].default for n in own} == {d.name: d.default for d in PARAMETERS}


def test_the_clock_s_parts_are_the_learner_s():
    from market.sim import declared
    from strategies import base

    assert declared.CLOCK_PARTS == base.CLOCK_PARTS


def test_every_flag_of_the_market_command_comes_from_a_declaration():
    import argparse

    from market.cli import market_cmd
    from market.sim.declared import PARAMETERS

    parser = argparse.ArgumentParser()
    market_cmd.add_arguments(parser)
    flags = {s for a in parser._actions for s in a.option_strings} - {"-h", "--help"}
    own = {"--steps", "--seed", "--engine", "--out"}
    assert flags - own == {d.flag for d in PARAMETERS if d.flag}


@pytest.mark.parametrize("mix, words", [
    ("qlearning:a,b.npz=1", "unknown strategy 'b.npz'"),
    ("qlearning:a=b.npz=1", "share of 'qlearning:a' must be a number"),
])
def test_a_file_name_a_mix_cannot_hold_says_how_to_name_it(mix, words):
    from market.sim import params as p

    with pytest.raises(ValueError) as exc:
        p.check_mix("seller_mix", p.parse_mix(mix, "seller_mix"))
    assert words in str(exc.value) and "cannot hold ',' or '='" in str(exc.value)


@pytest.mark.parametrize("spec", ["negmas", "genius", "genius:AgentK"])
def test_a_python_strategy_refused_on_a_book_loads_no_library(spec):
    """The refusal is read from the strategy's class, before its argument is checked (which
    loads NegMAS or the ANAC agents and plays a trial negotiation): it is immediate, and a
    command says it in one line, no loading spinner before it."""
    import subprocess
    import sys

    code = (f"import sys\nfrom market.sim import params\ntry:\n"
            f"    params.check({{'institution': 'call', 'seller_mix': {{{spec!r}: 1.0}}}})\n"
            f"except ValueError as exc:\n    print(exc)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"('negmas', 'negmas_genius_agents')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert f"{spec!r} cannot play in institution call (it decides in Python" in out[0]
    assert out[1] == "[]"


def test_parameters_a_command_checked_reach_the_model_as_they_are():
    """``run.py market`` checks its flags once (naming them in messages) and hands the result
    to the model whole: the same market as from keywords, never checked twice, and nothing
    beside it."""
    p = params.check({"n_buyers": 6, "n_sellers": 4, "seller_mix": {"boulware": 1.0}})
    handed, typed = MarketModel(p, seed=2), MarketModel(**p.kwargs(), seed=2)
    assert handed.params is p and typed.params == p
    handed.run(6)
    typed.run(6)
    pd.testing.assert_frame_equal(handed.datacollector.get_model_vars_dataframe(),
                                  typed.datacollector.get_model_vars_dataframe())
    for bad in (lambda: MarketModel(p, n_buyers=5), lambda: MarketModel({"n_buyers": 5})):
        with pytest.raises(TypeError, match="come alone"):
            bad()


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_control_groups_memory_limit_bounds_what_a_market_may_need(version, tmp_path,
                                                                      monkeypatch):
    """In a container the machine's memory is not the process's: the smallest limit of its
    control group and those above it bounds the estimate, and the message says whose."""
    import market.limits

    group = "docker/abc" if version == "v2" else "process_api/abc"
    line = f"0::/{group}" if version == "v2" else f"4:memory:/{group}"
    (tmp_path / "cgroup").write_text(f"12:pids:/x\n{line}\n")
    base = tmp_path / "fs" if version == "v2" else tmp_path / "fs" / "memory"
    name = "memory.max" if version == "v2" else "memory.limit_in_bytes"
    (base / group).mkdir(parents=True)
    (base / group / name).write_text("max\n" if version == "v2" else "9223372036854771712\n")
    (base / "docker" if version == "v2" else base / "process_api").joinpath(name).write_text(
        f"{2 * 2**30}\n")  # the group above holds the limit
    monkeypatch.setattr(market.limits, "PROC_CGROUP", str(tmp_path / "cgroup"))
    monkeypatch.setattr(market.limits, "CGROUP_ROOT", str(tmp_path / "fs"))
    assert market.limits.cgroup_memory() == 2 * 2**30
    assert market.limits.machine_memory() == 2 * 2**30
    with pytest.raises(ValueError, match=r"at most 1\.6 GiB, 80% of its control group's "
                                         r"limit of 2\.0 GiB"):
        params.check({"n_buyers": 1_000_000, "n_sellers": 1_000_000})
