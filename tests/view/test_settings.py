"""The market page's settings: every strategy listed, shares normalised, one shared validation."""

from __future__ import annotations

import pytest

import strategies
from market.game.rules import Protocol
from market.view.components import ViewMarket, summary_items
from market.view.settings import (
    NUMBERS,
    default_settings,
    mix_from_weights,
    model_kwargs,
    shares_text,
)


def test_each_mix_lists_every_registered_strategy():
    s = default_settings()
    for side in ("seller", "buyer"):
        assert list(s[f"{side}_weights"]) == strategies.names()
    assert s["seller_weights"]["averaging"] == 50 and s["seller_weights"]["qlearning"] == 50
    assert sum(s["buyer_weights"].values()) == s["buyer_weights"]["averaging"] == 100


def test_a_newly_registered_strategy_appears_without_editing_the_view(monkeypatch):
    names = [*strategies.names(), "brand-new"]
    monkeypatch.setattr(strategies, "names", lambda: names)
    assert "brand-new" in default_settings()["seller_weights"]


def test_weights_are_normalised_to_shares():
    assert mix_from_weights("seller", {"averaging": 30, "zi-c": 10, "spe": 0}) == {
        "averaging": 0.75, "zi-c": 0.25}
    assert shares_text({"averaging": 30, "zi-c": 10, "spe": 0}) == {
        "averaging": "75%", "zi-c": "25%", "spe": "0%"}
    assert set(shares_text({"a": 0, "b": 0}).values()) == {"-"}


def test_all_zero_weights_say_so_naming_the_side():
    with pytest.raises(ValueError, match="buyer mix: every weight is 0; give at least one"):
        mix_from_weights("buyer", {"averaging": 0, "zi-c": 0})
    bad = {**default_settings(), "seller_weights": {n: 0 for n in strategies.names()}}
    with pytest.raises(ValueError, match="seller mix: every weight is 0"):
        model_kwargs(bad)


def test_every_setting_reaches_the_model():
    s = {**default_settings(), "n_sellers": 12, "n_buyers": 9, "prices": 7, "rounds": 3,
         "period": 4, "first": "seller", "redraw": True, "clock": True, "teams": 3,
         "common_wallet": True, "seed": 7,
         "buyer_weights": {**{n: 0 for n in strategies.names()}, "zi-c": 20, "boulware": 60}}
    m = ViewMarket(**model_kwargs(s))
    assert (len(m.sellers), len(m.buyers)) == (12, 9)
    p = m.params
    assert m.market.protocol == Protocol(7, 3) and m.params.period == 4 and p.first == "seller"
    assert p.redraw and p.clock and p.teams == 3 and p.common_wallet
    assert m.params.buyer_mix == pytest.approx({"boulware": 0.75, "zi-c": 0.25})
    assert m.params.seller_mix == pytest.approx({"averaging": 0.5, "qlearning": 0.5})
    text = " ".join(summary_items(m))
    for needle in ("12 sellers, 9 buyers", "P = 7 price levels, T = 3 rounds",
                   "trading period 4 steps", "first mover: seller", "new values each period: on",
                   "market clock: on", "teams: 3", "common wallet: on", "seed 7",
                   "buyers: boulware 75%, zi-c 25%"):
        assert needle in text, needle


def test_the_discount_settings_reach_the_model_only_where_set():
    plain = model_kwargs(default_settings())
    assert "seller_discount" not in plain and "buyer_discount" not in plain
    s = {**default_settings(), "seller_discount": 0.8, "buyer_discount": 0.95}
    m = ViewMarket(**model_kwargs(s))
    assert m.market.protocol == Protocol(5, 5, 0.8, 0.95)
    assert "discount per offer: Seller 0.8, Buyer 0.95" in " ".join(summary_items(m))
    with pytest.raises(ValueError, match=r"seller_discount must be a number in \(0, 1\]"):
        model_kwargs({**default_settings(), "seller_discount": 0.0})


def test_the_same_seed_gives_the_same_market():
    a, b = (ViewMarket(**model_kwargs(default_settings())) for _ in range(2))
    for _ in range(5):
        a.step()
        b.step()
    assert a.summary() == pytest.approx(b.summary(), nan_ok=True)


@pytest.mark.parametrize("key,value,needle", [
    ("n_sellers", 0, "Sellers must be an integer in [1, 1000]"),
    ("n_buyers", 1001, "Buyers must be an integer in [1, 1000]"),
    ("prices", 1, "Price levels P must be an integer in [2, 20]"),
    ("seed", -1, "seed must be an integer in [0, "),
    ("first", "nobody", "first must be one of random, seller, buyer"),
])
def test_bad_settings_name_the_setting_and_its_range(key, value, needle):
    with pytest.raises(ValueError) as exc:
        model_kwargs({**default_settings(), key: value})
    assert needle in str(exc.value)


def test_the_shared_market_validation_is_the_one_called(monkeypatch):
    """The page adds no rules of its own for the market: market.sim.params.check decides."""
    import market.view.settings as settings

    seen = []
    monkeypatch.setattr(settings, "check", lambda kw: seen.append(kw))
    kwargs = model_kwargs(default_settings())
    assert seen == [{k: v for k, v in kwargs.items() if k != "seed"}]
    assert set(NUMBERS) <= set(kwargs)


def test_the_discount_sliders_are_the_discounts_alone():
    """Other per-side numbers with a control (the revision's rates) are not time costs."""
    from market.view.settings import DISCOUNTS, REVISION_SLIDERS

    assert set(DISCOUNTS) == {"seller_discount", "buyer_discount"}
    assert set(REVISION_SLIDERS) == {"revision_rate", "selection", "mutation"}
    kwargs = model_kwargs(default_settings())
    assert not set(kwargs) & {"revision", "revision_rate", "selection", "mutation", "inherit"}


def test_the_breakdown_risk_and_costs_are_sliders_passed_only_where_set():
    from market.view.settings import PRESSURE_SLIDERS

    assert set(PRESSURE_SLIDERS) == {"breakdown", "seller_cost", "buyer_cost"}
    plain = model_kwargs(default_settings())
    assert not set(PRESSURE_SLIDERS) & set(plain)  # a market without them, built as before
    s = {**default_settings(), "breakdown": 0.2, "buyer_cost": 0.05}
    got = model_kwargs(s)
    assert got["breakdown"] == 0.2 and got["buyer_cost"] == 0.05 and "seller_cost" not in got
    with pytest.raises(ValueError, match=r"breakdown must be a number in \[0, 1\)"):
        model_kwargs({**default_settings(), "breakdown": 1.0})
