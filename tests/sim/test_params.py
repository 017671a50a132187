"""Market parameters: one check for the model, the market command and the batch; caps; mixes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market.errors import UsageError
from market.limits import PRICES_MAX, TABLE_CELLS_MAX, TRADERS_MAX
from market.sim import params
from market.sim.model import MarketModel


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
    with pytest.raises(UsageError, match="lower --prices/--rounds"):
        params.check({"n_buyers": 1_000_000, "buyer_mix": {"qlearning": 1}, "prices": 40,
                      "rounds": 40}, names)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_buyers": TRADERS_MAX + 1}, f"n_buyers must be an integer in \\[1, {TRADERS_MAX}\\]"),
    ({"teams": TRADERS_MAX + 1}, "teams must be an integer in"),
    ({"prices": PRICES_MAX + 1}, f"prices must be an integer in \\[2, {PRICES_MAX}\\]"),
    ({"period": 10**9}, "period must be an integer in"),
    ({"buyer_mix": {"qlearning": 1}, "n_buyers": 1_000_000}, "Q-table cells"),
])
def test_sizes_beyond_the_caps_are_refused_before_anything_is_built(kwargs, message):
    with pytest.raises(UsageError, match=message):
        params.check(kwargs)
    with pytest.raises(UsageError, match=message):
        MarketModel(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"n_buyers": 10, "n_sellers": 6, "buyer_mix": {"qlearning": 0.5, "averaging": 0.5},
     "seller_mix": {"qlearning": 1}, "clock": True, "period": 3},
    {"n_buyers": 7, "n_sellers": 6, "buyer_mix": {"qlearning": 1}, "prices": 4, "rounds": 3},
    {"n_buyers": 7, "n_sellers": 6, "buyer_mix": {"qlearning": 1}, "rational_learners": False},
])
def test_the_table_estimate_is_what_the_learners_allocate(kwargs):
    model = MarketModel(**kwargs, seed=0)
    tables = [s.tables for side in (0, 1) for s in model.strategy_objects(side)
              if s.name == "qlearning"]
    assert sum(t.size for t in tables) == params.table_cells(model.params)
    assert params.table_cells(model.params) < TABLE_CELLS_MAX


def test_the_declaration_is_the_models_signature():
    """Tools that sweep parameters read :class:`Params`; the model takes exactly those."""
    assert params.model_parameters() == params.model_parameters(MarketModel)
    declared = params.model_parameters()
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
