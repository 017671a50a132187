"""The marketplace's schedule and invariants: money, rationality, periods, efficiency,
reproducibility."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from market.game.rules import SELLER, Turn
from market.sim.model import MarketModel
from strategies.qlearning import MarketQLearning
from strategies.rule_based import RuleBased, acceptable

MIXED = {"averaging": 0.5, "qlearning": 0.5}


class _AcceptAny(RuleBased):
    """Offers its own reservation level; accepts any offer that does not lose money."""

    name = "test-accept-any"

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        return turn.lo if turn.side == SELLER else turn.hi

    @staticmethod
    def accepts(turn: Turn, target: int) -> bool:
        return acceptable(turn)


@contextlib.contextmanager
def accept_any() -> Iterator[str]:
    """Register the test strategy only for the duration of a test (the registry is global)."""
    strategies.register(_AcceptAny)
    try:
        yield _AcceptAny.name
    finally:
        strategies.STRATEGIES.pop(_AcceptAny.name, None)


def _rational_names() -> list[str]:
    """Registered strategies that promise never to trade outside their range, plus the market
    learner (rational by default in the market)."""
    names = [
        n for n, cls in strategies.STRATEGIES.items()
        if cls.classifier.get("individually_rational") and "test" not in n
    ]
    return sorted({*names, "qlearning"})


def _deals(model: MarketModel) -> pd.DataFrame:
    """The last step's deals with each trader's reservation price."""
    pairs = model.last_step.frame()
    res = model.market.agents_now().set_index("unique_id")["reservation"]
    pairs = pairs[pairs["level"] > 0].copy()
    pairs["cost"] = res.loc[pairs["seller_id"]].to_numpy()
    pairs["value"] = res.loc[pairs["buyer_id"]].to_numpy()
    return pairs


# --- invariants ----------------------------------------------------------------------------
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_b=st.integers(1, 40),
    n_s=st.integers(1, 40),
    share=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 10_000),
    redraw=st.booleans(),
    first=st.sampled_from(["random", "seller", "buyer"]),
)
def test_money_is_conserved(n_b, n_s, share, seed, redraw, first):
    mix = {"averaging": 1 - share, "qlearning": share}
    model = MarketModel(n_buyers=n_b, n_sellers=n_s, buyer_mix=mix, seller_mix=mix, period=3,
                        redraw=redraw, first=first, seed=seed)
    for _ in range(7):
        model.step()
    received = model.sellers.cash.sum()
    paid = -model.buyers.cash.sum()
    assert received == pytest.approx(paid, abs=1e-9)
    s = model.summary()
    assert received == pytest.approx(s["mean_price"] * s["deals"] if s["deals"] else 0.0)
    earned = model.sellers.earnings.sum() + model.buyers.earnings.sum()
    assert earned == pytest.approx(s["realised_surplus"])
    assert model.sellers.trades.sum() == model.buyers.trades.sum() == s["deals"]


@pytest.mark.parametrize("name", _rational_names())
def test_rational_traders_never_trade_outside_their_reservation_price(name):
    seller_mix = {name: 0.5, "averaging": 0.5} if name != "averaging" else {name: 1.0}
    model = MarketModel(n_buyers=60, n_sellers=60, buyer_mix={name: 1.0},
                        seller_mix=seller_mix, period=4, redraw=True, seed=11)
    deals = 0
    for _ in range(12):
        model.step()
        d = _deals(model)
        deals += len(d)
        assert (d["price"] >= d["cost"] - 1e-9).all()
        assert (d["price"] <= d["value"] + 1e-9).all()
    periods = model.datacollector.get_table_dataframe("periods")
    eff = periods["efficiency"].to_numpy()
    assert ((eff >= 0) & (eff <= 1 + 1e-12)).all()
    assert deals > 0 or name in ("hardliner",)  # two hardliners may never agree


def test_unconstrained_learners_can_lose_money_which_is_why_rational_is_the_default():
    model = MarketModel(n_buyers=80, n_sellers=80, buyer_mix={"qlearning": 1.0},
                        seller_mix={"qlearning": 1.0}, rational_learners=False, seed=2,
                        strategy_params={"qlearning": {"epsilon_start": 1.0, "epsilon_end": 1.0}})
    losses = 0
    for _ in range(10):
        model.step()
        d = _deals(model)
        losses += int(((d["price"] < d["cost"]) | (d["price"] > d["value"])).sum())
    assert losses > 0


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 60), seed=st.integers(0, 10_000), first=st.sampled_from(["random", "buyer"])
)
def test_market_of_accepting_traders_with_overlapping_ranges_is_fully_efficient(n, seed, first):
    with accept_any() as name:
        model = MarketModel(n_buyers=n, n_sellers=n, buyer_mix={name: 1.0}, seller_mix={name: 1.0},
                            value_range=(60, 100), cost_range=(0, 40), period=3, first=first,
                            seed=seed, engine="lockstep")  # (a test's class: no engine compile)
        for _ in range(6):
            model.step()
    periods = model.datacollector.get_table_dataframe("periods")
    assert (periods["deals"] == n).all()
    assert np.allclose(periods["efficiency"], 1.0)
    assert model.summary()["efficiency"] == pytest.approx(1.0)
    # all trade in the first step of each period, then wait for the next period
    deals = model.datacollector.get_model_vars_dataframe()["deals"]
    assert deals.tolist()[1:] == [n, 0, 0, n, 0, 0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_b=st.integers(1, 30), n_s=st.integers(1, 30), seed=st.integers(0, 1000),
       period=st.integers(1, 4))
def test_each_trader_trades_at_most_one_unit_per_period(n_b, n_s, seed, period):
    model = MarketModel(n_buyers=n_b, n_sellers=n_s, buyer_mix=MIXED, seller_mix=MIXED,
                        period=period, seed=seed)
    for _ in range(3):  # periods
        start = (model.sellers.trades.copy(), model.buyers.trades.copy())
        for _ in range(period):
            model.step()
        assert ((model.sellers.trades - start[0]) <= 1).all()
        assert ((model.buyers.trades - start[1]) <= 1).all()
    periods = model.datacollector.get_table_dataframe("periods")
    assert (periods["deals"] <= min(n_b, n_s)).all()
    assert len(periods) == 3


def test_values_are_kept_or_redrawn_between_periods():
    kept = MarketModel(n_buyers=20, n_sellers=20, period=2, seed=4)
    redrawn = MarketModel(n_buyers=20, n_sellers=20, period=2, redraw=True, seed=4)
    before = (kept.buyers.reservation.copy(), redrawn.buyers.reservation.copy())
    for m in (kept, redrawn):
        for _ in range(3):
            m.step()
    assert np.array_equal(kept.buyers.reservation, before[0])
    assert not np.array_equal(redrawn.buyers.reservation, before[1])
    periods = redrawn.datacollector.get_table_dataframe("periods")
    assert periods["ce_price_lo"].nunique() == 1  # one period closed so far


# --- reproducibility -----------------------------------------------------------------------
def _frames(seed: int, **kw) -> list[pd.DataFrame]:
    model = MarketModel(n_buyers=40, n_sellers=35, buyer_mix=MIXED, seller_mix=MIXED, period=5,
                        seed=seed, **kw)
    for _ in range(12):
        model.step()
    return [*model.datacollector.frames().values(), model.last_step.frame()]


@pytest.mark.parametrize("kw", [{}, {"redraw": True, "learner_params": "drawn", "clock": True}])
def test_same_seed_same_tables_bit_for_bit(kw):
    a, b = _frames(5, **kw), _frames(5, **kw)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)
    c = _frames(6, **kw)
    assert not a[0].equals(c[0])


# --- the schedule's options ------------------------------------------------------------------
def test_clocked_learners_see_the_time_left():
    model = MarketModel(n_buyers=20, n_sellers=20, buyer_mix={"qlearning": 1.0},
                        seller_mix={"qlearning": 1.0}, clock=True, period=6, seed=3,
                        engine="lockstep")  # the spy sees Python act; the engine is the same
    seen: list[np.ndarray] = []
    learner = model.market.strategies[0][0]
    original = learner.act

    def spy(obs, rng):
        seen.append(np.unique(obs.time_left))
        return original(obs, rng)

    learner.act = spy
    for _ in range(6):
        model.step()
    assert isinstance(learner, MarketQLearning) and learner.buckets == 4
    assert sorted({int(x) for arr in seen for x in arr}) == [1, 2, 3, 4, 5, 6]


def test_a_pickled_model_continues_exactly_like_the_original():
    """Batch runs ship models between processes; a copy must not drift from the original."""
    import pickle

    model = MarketModel(n_buyers=15, n_sellers=12, buyer_mix=MIXED, seller_mix=MIXED, period=4,
                        clock=True, seed=8)
    for _ in range(6):
        model.step()
    copy = pickle.loads(pickle.dumps(model))
    for m in (model, copy):
        for _ in range(5):
            m.step()
    assert copy.summary() == model.summary()
    pd.testing.assert_frame_equal(copy.datacollector.get_model_vars_dataframe(),
                                  model.datacollector.get_model_vars_dataframe(), check_exact=True)


@pytest.mark.parametrize("how", ["step", "run"])
def test_a_ctrl_c_mid_step_leaves_a_model_that_goes_on_like_one_never_interrupted(
        how, monkeypatch):
    """In a notebook, Ctrl-C while a compiled call runs is raised once its steps are
    recorded: the model is whole, and stepping on gives the tables of a model that was never
    interrupted."""
    import os
    import signal

    from market import processes
    from market.sim import engine

    monkeypatch.setattr(processes, "_installed", [False])  # Python's own handler, as in a
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # notebook
    calls = engine.CompiledEngine.steps

    def interrupted(self, *args, **kwargs):  # noqa: ANN001, ANN202
        os.kill(os.getpid(), signal.SIGINT)  # arrives while the call runs
        return calls(self, *args, **kwargs)

    kw = dict(n_buyers=15, n_sellers=12, buyer_mix=MIXED, seller_mix=MIXED, period=4, seed=8)
    model, calm = MarketModel(**kw), MarketModel(**kw)
    try:
        for m in (model, calm):
            getattr(m, how)(*(() if how == "step" else (3,)))
        monkeypatch.setattr(engine.CompiledEngine, "steps", interrupted)
        with pytest.raises(KeyboardInterrupt):
            getattr(model, how)(*(() if how == "step" else (6,)))
        monkeypatch.setattr(engine.CompiledEngine, "steps", calls)
        made = model.steps
        getattr(calm, how)(*(() if how == "step" else (made - calm.steps,)))
        for m in (model, calm):
            m.run(5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert model.steps == calm.steps and model.summary() == calm.summary()
    pd.testing.assert_frame_equal(model.datacollector.get_model_vars_dataframe(),
                                  calm.datacollector.get_model_vars_dataframe(), check_exact=True)



@pytest.mark.parametrize("spec,cls", [("negmas:AspirationNegotiator", "AspirationNegotiator"),
                                      ("genius:AgentK", "AgentK")])
def test_a_mix_plays_the_class_its_spec_names(spec, cls):
    """``negmas:CLASS`` and ``genius:AGENT`` in a mix play that class (the market once built
    every such spec with its default class, as if the argument were not there)."""
    pytest.importorskip("negmas_genius_agents" if spec.startswith("genius") else "negmas")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the lockstep notice
        m = MarketModel(n_buyers=2, n_sellers=2, seller_mix={spec: 1.0}, seed=3)
    assert m.market.strategies[0][0].negotiator_class.__name__ == cls


RUNS = {
    "mixed, clock, redraw": {"buyer_mix": MIXED, "seller_mix": MIXED, "clock": True,
                             "redraw": True, "period": 7, "max_steps": 33},
    "revision": {"buyer_mix": MIXED, "seller_mix": {"boulware": 0.5, "averaging": 0.5},
                 "revision": "imitate", "period": 5},
    "teams, costs": {"seller_mix": {"boulware": 1.0}, "buyer_mix": {"conceder": 1.0},
                     "teams": 3, "breakdown": 0.1, "seller_cost": 0.5},
    "agents every step": {"buyer_mix": MIXED, "agent_data": "step", "period": 4},
    "no agent data, across periods": {"buyer_mix": MIXED, "seller_mix": MIXED, "clock": True,
                                      "agent_data": "none", "period": 3, "max_steps": 35},
    "double auction": {"seller_mix": {"zi-c": 1.0}, "buyer_mix": {"zip": 1.0},
                       "institution": "cda"},
    "lockstep": {"buyer_mix": MIXED, "seller_mix": MIXED, "engine": "lockstep"},
}


@pytest.mark.parametrize("kw", RUNS.values(), ids=RUNS.keys())
def test_run_makes_the_tables_of_as_many_steps(kw):
    """``run(n)`` makes a period's steps in one compiled call where it can: every table, the
    last step's negotiations, the traders' arrays and the generator's state must be what
    ``n`` calls of ``step()`` leave, however the run is cut; and, in bilateral bargaining,
    what ``n`` steps of the lockstep path leave, which records each step on its own (a
    compiled ``step()`` records its step as ``run`` does)."""
    made = []
    lockstep = kw.get("institution", "pairs") == "pairs"
    for cuts, engine in (([40], None), ([3, 1, 4, 0, 32], None), (None, None),
                         *([(None, "lockstep")] if lockstep else [])):
        model = MarketModel(n_buyers=16, n_sellers=14, seed=21,
                            **{**kw, **({"engine": engine} if engine else {})})
        for n in cuts or [1] * 40:
            if cuts is None:
                if model.running:
                    model.step()
            else:
                model.run(n)
        made.append(model)
    a, b, c, *others = made
    for m in (a, b, *others):
        assert m.steps == c.steps and m.running == c.running
        assert m.rng.bit_generator.state == c.rng.bit_generator.state
        for x, y in zip(_all_frames(m), _all_frames(c), strict=True):
            pd.testing.assert_frame_equal(x, y, check_exact=True)
        for side in (0, 1):
            np.testing.assert_array_equal(m.market.books[side].earnings,
                                          c.market.books[side].earnings)


TWO = {"averaging": 0.5, "boulware": 0.5}


@pytest.mark.parametrize(("kw", "calls"), [
    ({"agent_data": "none"}, 1),
    ({"agent_data": "period"}, 10),
    ({"agent_data": "none", "redraw": True}, 10),
    ({"agent_data": "none", "revision": "imitate", "seller_mix": TWO}, 10),
])
def test_run_goes_on_across_periods_in_one_call_when_nothing_happens_between(kw, calls,
                                                                             monkeypatch):
    """A batch's market (no agent data, nothing redrawn or revised) runs all its steps in one
    compiled call, the periods opening inside it; otherwise a period a call."""
    model = MarketModel(n_buyers=10, n_sellers=10, period=4, seed=2, **kw)
    made = []
    steps = model.engine.steps
    monkeypatch.setattr(model.engine, "steps", lambda *a: made.append(a[2]) or steps(*a))
    model.run(40)
    assert len(made) == calls and sum(made) == 40 and model.period == 9
    assert len(model.datacollector.get_table_dataframe("periods")) == 10


def _all_frames(model: MarketModel) -> list[pd.DataFrame]:
    return [*model.datacollector.frames().values(), model.last_step.frame()]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10", 10**9])
def test_run_refuses_a_step_count_it_cannot_make_in_one_line(bad):
    model = MarketModel(n_buyers=4, n_sellers=4, seed=1)
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[0, 1000000\] "):
        model.run(bad)
    assert model.steps == 0


def test_run_model_ends_at_max_steps_as_mesa_expects():
    model = MarketModel(n_buyers=10, n_sellers=10, max_steps=25, seed=3)
    model.run_model()  # Mesa's loop: runs while model.running
    assert model.steps == 25 and model.running is False
    last = model.datacollector.get_model_vars_dataframe().iloc[-1]
    assert last["run.deals"] == model.summary()["deals"]
    assert last["run.efficiency"] == model.summary()["efficiency"]


def test_mesa_batch_run_rows_carry_the_run_s_figures():
    import mesa

    rows = mesa.batch_run(MarketModel, parameters={"n_buyers": [10, 14], "n_sellers": 12,
                                                   "max_steps": 20, "seed": 5},
                          iterations=1, max_steps=20, data_collection_period=-1,
                          number_processes=1, display_progress=False)
    assert len(rows) == 2
    for row in rows:
        again = MarketModel(n_buyers=row["n_buyers"], n_sellers=12, seed=5)
        for _ in range(row["Step"]):  # the row is Mesa's collection at index Step
            again.step()
        s = again.summary()
        assert row["run.deals"] == s["deals"] and row["run.efficiency"] == s["efficiency"]
        assert row["run.buyer_share"] == s["buyer_share"]


def test_mesa_batch_run_returns_agent_rows_when_agent_data_is_collected():
    """Mesa's batch_run reads the collector's per-step agent records: a row per agent and
    collected step, with Mesa's AgentID, as in Mesa's own examples."""
    import mesa

    rows = mesa.batch_run(
        MarketModel,
        parameters={"n_buyers": 5, "n_sellers": 4, "max_steps": 3, "seed": [1],
                    "agent_data": "step"},
        iterations=1, max_steps=3, data_collection_period=1, number_processes=1,
        display_progress=False)
    table = pd.DataFrame(rows)
    assert table.groupby("Step").size().tolist() == [9, 9, 9]  # every agent, every step
    last = table[table["Step"] == 2].set_index("AgentID")
    model = MarketModel(n_buyers=5, n_sellers=4, max_steps=3, seed=1, agent_data="step")
    for _ in range(2):
        model.step()
    now = model.market.agents_now().set_index("unique_id")
    assert last["wallet"].to_dict() == now["wallet"].to_dict()
    assert set(last["side"]) == {"seller", "buyer"}
