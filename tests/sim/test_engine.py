"""The compiled market engine and the lockstep path give the same tables from the same seed.

Every built-in strategy alone, then random mixes over sizes, P, T, period,
clock, teams, common wallet, drawn learners, redrawn values and first
movers: the model, period, price and agent tables must be identical, as
must the learners' Q-tables and the generator's state afterwards.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import strategies
from market.sim import engine
from market.sim.model import MarketModel
from strategies import compiled
from strategies.averaging import Averaging

BUILT_IN = sorted(n for n in strategies.names() if compiled.has_form(strategies.get(n)))


def _run(kind: str, steps: int, **kw) -> MarketModel:
    model = MarketModel(engine=kind, **kw)
    for _ in range(steps):
        model.step()
    return model


def _assert_same(kw: dict, steps: int) -> MarketModel:
    a = _run("compiled", steps, **kw)
    b = _run("lockstep", steps, **kw)
    assert isinstance(a.engine, engine.CompiledEngine)
    assert isinstance(b.engine, engine.LockstepEngine)
    for frame, fa in a.datacollector.frames().items():
        fb = b.datacollector.frames()[frame]
        assert fa.equals(fb), f"{frame} differs for {kw}"
    for side in (0, 1):
        for sa, sb in zip(a.market.strategies[side], b.market.strategies[side], strict=True):
            if hasattr(sa, "tables"):
                assert np.array_equal(sa.tables, sb.tables)
                assert np.array_equal(sa.played, sb.played)
            if hasattr(sa, "wait_value"):
                assert np.array_equal(sa.wait_value, sb.wait_value)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    return a


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_built_in_strategy_plays_alike_on_both_paths(name):
    kw = dict(n_sellers=23, n_buyers=19, seller_mix={name: 1.0}, buyer_mix={name: 1.0},
              period=4, seed=11)
    model = _assert_same(kw, 12)
    assert model.datacollector.get_model_vars_dataframe()["pairs"].sum() > 0


def _random_config(rng: np.random.Generator) -> dict:
    names = rng.choice(BUILT_IN, size=rng.integers(1, 4), replace=False)
    other = rng.choice(BUILT_IN, size=rng.integers(1, 4), replace=False)
    def mix(ns: np.ndarray) -> dict[str, float]:
        w = rng.uniform(0.2, 1, len(ns))
        return {str(n): float(x) for n, x in zip(ns, w / w.sum(), strict=True)}

    clock = bool(rng.integers(2))
    teams = int(rng.integers(1, 4)) if rng.integers(2) else None
    cfg = dict(
        n_sellers=int(rng.integers(1, 60)), n_buyers=int(rng.integers(1, 60)),
        seller_mix=mix(names), buyer_mix=mix(other),
        prices=int(rng.integers(2, 12)), rounds=int(rng.integers(1, 7)),
        period=int(rng.integers(1, 6)), redraw=bool(rng.integers(2)),
        first=str(rng.choice(["random", "seller", "buyer"])),
        clock=clock, clock_buckets=int(rng.integers(2, 4)) if clock else None,
        teams=teams, common_wallet=bool(teams and rng.integers(2)),
        learner_params=str(rng.choice(["fixed", "drawn"])),
        rational_learners=bool(rng.integers(2)) or clock,
        seed=int(rng.integers(1_000_000)),
    )
    cfg["clock_parts"] = str(rng.choice(["both", "state", "wait"])) if clock else "both"
    for name in ("discount", "seller_discount", "buyer_discount"):  # time costs, sometimes
        if rng.integers(3) == 0:
            cfg[name] = float(rng.uniform(0.3, 1.0))
    if rng.integers(2) and max(len(names), len(other)) > 1:  # strategy revision, sometimes
        cfg.update(revision=str(rng.choice(["imitate", "moran", "replicator"])),
                   revision_rate=float(rng.uniform(0.1, 1.0)),
                   selection=float(rng.uniform(0, 5)), mutation=float(rng.uniform(0, 0.3)),
                   inherit=str(rng.choice(["fresh", "copy"])))
    if rng.integers(3) == 0:  # a breakdown risk and costs per offer, sometimes (drawn last,
        cfg.update(breakdown=float(rng.uniform(0, 0.5)),  # so earlier configs are as before)
                   seller_cost=float(rng.choice([0.0, 0.05])),
                   buyer_cost=float(rng.choice([0.0, 0.1])))
    return cfg


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_built_in_strategy_plays_alike_on_both_paths_under_breakdown_risk_and_costs(name):
    """The talks break down by draws from the model's generator, in the same order on both
    paths (deterministic strategies included, which then play move by move); costs come off
    the deals' gains."""
    kw = dict(n_sellers=23, n_buyers=19, seller_mix={name: 1.0}, buyer_mix={name: 1.0},
              period=4, seed=11, breakdown=0.3, seller_cost=0.02, buyer_cost=0.05, rounds=4)
    model = _assert_same(kw, 12)
    free = _run("compiled", 12, **{**kw, "breakdown": 0.0, "seller_cost": 0.0,
                                    "buyer_cost": 0.0})
    if free.summary()["deals"]:  # (two hardliners never deal: nothing for time to change)
        frame = model.datacollector.get_model_vars_dataframe()
        assert not frame.equals(free.datacollector.get_model_vars_dataframe())


@pytest.mark.parametrize("parts", ["both", "state", "wait"])
def test_each_part_of_the_clock_plays_alike_on_both_paths_and_does_what_it_says(parts):
    kw = dict(n_sellers=30, n_buyers=30, seller_mix={"qlearning": 1.0},
              buyer_mix={"qlearning": 1.0}, period=5, clock=True, clock_buckets=3,
              clock_parts=parts, seed=5)
    model = _assert_same(kw, 40)
    learner = model.market.strategies[0][0]
    slots = learner.tables.reshape(learner.n_members, 2, 3, -1)
    used = np.abs(slots).sum(axis=(0, 1, 3)) > 0  # which time-left slots were ever updated
    assert used.tolist() == ([True, False, False] if parts == "wait" else [True, True, True])
    assert np.any(learner.wait_value != 0)  # the value of waiting is learned in every mode
    both = _run("compiled", 40, **{**kw, "clock_parts": "both"})
    if parts != "both":  # each part alone is a different market from both together
        frame = model.datacollector.get_model_vars_dataframe()
        assert not frame.equals(both.datacollector.get_model_vars_dataframe())


@pytest.mark.parametrize("config", range(36))
def test_random_mixes_play_alike_on_both_paths(config):
    kw = _random_config(np.random.default_rng(config))
    _assert_same(kw, 15)


def test_a_market_with_a_strategy_without_a_compiled_form_runs_lockstep_and_says_so():
    class Stubborn(Averaging):  # a user's subclass that decides in Python: no compiled form
        name = "stubborn-test"

        def act(self, obs, rng):
            return super().act(obs, rng)

    strategies.register(Stubborn)
    try:
        with pytest.warns(engine.LockstepNotice, match="stubborn-test"):
            m = MarketModel(n_sellers=10, n_buyers=10, seller_mix={"stubborn-test": 1.0},
                            buyer_mix={"averaging": 1.0}, seed=1)
        assert isinstance(m.engine, engine.LockstepEngine)
        m.step()
        with pytest.raises(ValueError, match="stubborn-test has none"):
            MarketModel(n_sellers=10, n_buyers=10, seller_mix={"stubborn-test": 1.0},
                        engine="compiled", seed=1)
    finally:
        strategies.STRATEGIES.pop("stubborn-test", None)


def test_a_market_of_built_in_strategies_runs_compiled_without_a_notice():
    with warnings.catch_warnings():
        warnings.simplefilter("error", engine.LockstepNotice)
        m = MarketModel(n_sellers=10, n_buyers=10, seller_mix={"zi-u": 1.0}, seed=2)
    assert isinstance(m.engine, engine.CompiledEngine)


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine must be one of"):
        MarketModel(n_sellers=2, n_buyers=2, engine="warp", seed=0)


def _random_side(rng: np.random.Generator, side: int, protocol, n: int):
    from market.game.protocol import Side
    from market.game.qtable import n_rows

    names = list(rng.choice(BUILT_IN, size=int(rng.integers(1, 4)), replace=False))
    pops = []
    for name in names:
        kw = {}
        if name == "qlearning":  # a saved-table player with ties, exploring a little
            kw = dict(tables=rng.integers(0, 3, (2, n_rows(protocol), protocol.n_actions))
                      .astype(float), epsilon_start=0.2, epsilon_end=0.2)
        pops.append(strategies.make(name, side, n, protocol, **kw))
    group = rng.integers(0, len(pops), n)
    lo = rng.integers(1, protocol.prices + 2, n)
    hi = rng.integers(0, protocol.prices + 1, n)
    return Side(pops, group, rng.integers(0, n, n), lo, hi)


@pytest.mark.parametrize("case", range(12))
def test_negotiations_outside_a_market_are_the_same_compiled_or_not(case):
    """The tournament's and the report's batches: ``engine.negotiate`` against the protocol."""
    from market.game import protocol as lockstep
    from market.game.rules import Protocol

    rng = np.random.default_rng(case)
    proto = Protocol(int(rng.integers(2, 9)), int(rng.integers(1, 6)))
    n = int(rng.integers(1, 300))
    seller, buyer = _random_side(rng, 0, proto, n), _random_side(rng, 1, proto, n)
    first = rng.integers(0, 2, n)
    a_rng, b_rng = np.random.default_rng(case + 100), np.random.default_rng(case + 100)
    a = engine.negotiate(proto, seller, buyer, first, a_rng)
    b = lockstep.negotiate(proto, seller, buyer, first, b_rng)
    for field in ("actions", "first", "level", "n_moves"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a_rng.bit_generator.state == b_rng.bit_generator.state


@pytest.mark.parametrize("case", range(6))
def test_negotiations_that_may_break_down_are_the_same_compiled_or_not(case):
    from market.game import protocol as lockstep
    from market.game.rules import Protocol

    rng = np.random.default_rng(case + 50)
    proto = Protocol(int(rng.integers(2, 9)), int(rng.integers(2, 6)),
                     breakdown=float(rng.uniform(0.05, 0.6)))
    n = int(rng.integers(50, 300))
    seller, buyer = _random_side(rng, 0, proto, n), _random_side(rng, 1, proto, n)
    first = rng.integers(0, 2, n)
    a_rng, b_rng = np.random.default_rng(case), np.random.default_rng(case)
    a = engine.negotiate(proto, seller, buyer, first, a_rng)
    b = lockstep.negotiate(proto, seller, buyer, first, b_rng)
    for field in ("actions", "first", "level", "n_moves"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a_rng.bit_generator.state == b_rng.bit_generator.state
    broke = a.broke_down
    assert not (broke & (a.level > 0)).any()
    assert (a.n_moves[broke] >= 2).all()  # never after the opening offer


def test_the_lockstep_notice_is_one_plain_line_once_per_command(tmp_path):
    """Not Python's warning with its source line, and not once per run of a batch."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "run.py", "batch", "--param",
                        "seller_mix.negmas:BoulwareTBNegotiator=0.2,0.5", "--param",
                        "n_buyers=4", "--param", "n_sellers=4", "--steps", "2", "--iterations",
                        "2", "--processes", "2", "--out", str(tmp_path / "b.parquet")],
                       capture_output=True, text=True, cwd=root, timeout=300)
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stderr.splitlines() if "lockstep" in line]
    assert notes == ["run.py batch: note: the market runs on the lockstep path (each "
                     "strategy's Python act, slower): negmas has no compiled decision"]
    assert engine.lockstep_words(["b", "a", "c"]).endswith("a, b and c have no compiled "
                                                          "decision")
