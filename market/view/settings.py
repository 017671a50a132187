"""The market page's settings: what each control holds, its range, and the model it builds.

A control of the page edits one entry of a settings dictionary (plain
values: numbers, a strategy's weight, a choice); :func:`model_kwargs` turns
the settings into :class:`~market.sim.model.MarketModel` keyword arguments
and checks them with the one validation of market parameters that every
command shares, so the page refuses exactly what ``run.py market`` and
``run.py batch`` refuse, with the same words.

Each side's mix lists every registered strategy (``strategies.names()``) with
a weight from 0 to 100; shares are the weights normalised to sum to 1, so a
strategy added to ``strategies/`` appears on the page without editing it.
Nothing here imports Solara: the page and the tests use the same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import strategies
from market.game import pressure
from market.game.rules import SIDE_NAMES
from market.sim import institutions
from market.sim.declared import BY_NAME, FIRST_MOVERS, INSTITUTIONS, PARAMETERS
from market.sim.params import check  # the one shared validation


@dataclass(frozen=True)
class Number:
    """A numeric control: its label, range and step (the page shows the value beside it)."""

    label: str
    lo: int
    hi: int
    step: int = 1


def _numbers(names: tuple[str, ...], step: float = 1) -> dict[str, Number]:
    """The controls of ``names`` as their declarations give them: label and slider range
    (whole numbers at step 1; a fraction's step given)."""
    whole = step == 1
    return {name: Number(c.label, int(c.lo) if whole else c.lo,  # type: ignore[arg-type]
                         int(c.hi) if whole else c.hi, step)  # type: ignore[arg-type]
            for name in names if (c := BY_NAME[name].control) is not None}


def _switches(family: str | None) -> dict[str, str]:
    """The on/off controls of the parameters of ``family`` (None: the market's own), and
    what they say."""
    return {d.name: d.control.label for d in PARAMETERS
            if d.kind == "flag" and d.control is not None and d.family == family}


#: the numeric controls, in the sidebar's order (Sellers first, as the page reads), their
#: labels and slider ranges from the parameters' declarations
NUMBERS = _numbers(("n_sellers", "n_buyers", "prices", "rounds", "period", "teams"))
#: the on/off controls and what they say
SWITCHES = _switches(None)
#: each side's time cost: its discount factor per offer (the game takes any in (0, 1]; the
#: slider offers the useful part of it)
DISCOUNTS: dict[str, str] = {d.name: d.control.label for d in PARAMETERS
                             if d.name.endswith("discount") and d.control is not None}
DISCOUNT_MIN, DISCOUNT_STEP = float(BY_NAME["seller_discount"].control.lo), 0.01
#: the game's other time pressure (:data:`market.game.pressure.OTHERS`), sliders over the
#: declared controls' ranges (0: none, the default)
PRESSURE_SLIDERS = _numbers(tuple(d.name for d in pressure.OTHERS), 0.01)
#: strategy revision (:mod:`market.sim.revision`): its protocol and inheritance are choices,
#: its rates sliders over the declared controls' ranges
REVISION_CHOICES: dict[str, tuple[str, ...]] = {
    "revision": BY_NAME["revision"].choices, "inherit": BY_NAME["inherit"].choices}
REVISION_SLIDERS = _numbers(("revision_rate", "selection", "mutation"), 0.01)
#: partner choice in bilateral bargaining (:mod:`market.sim.matching`): the rule and the
#: service order are choices, beta and gamma sliders over the declared controls' ranges
MATCHING_CHOICES: dict[str, tuple[str, ...]] = {
    "matching": BY_NAME["matching"].choices, "service": BY_NAME["service"].choices}
MATCHING_SLIDERS = _numbers(("loyalty_beta", "loyalty_gamma"), 0.01)
#: a Buyer's memory (an integer slider) and what learners see (its switch), under loyalty
MATCHING_NUMBERS = _numbers(("loyalty_memory",))
MATCHING_SWITCHES = _switches("matching")
_MATCHING = (*MATCHING_CHOICES, *MATCHING_SLIDERS, *MATCHING_NUMBERS, *MATCHING_SWITCHES)
#: Buyers' values and Sellers' costs (:mod:`market.sim.schedules`): drawn from two ranges in
#: a shape (one for both sides, as ``--distribution``), or a named schedule
SUPPLY_CHOICES: dict[str, tuple[str, ...]] = {
    "schedule": BY_NAME["schedule"].choices, "value_dist": BY_NAME["value_dist"].choices}
RANGES = _numbers(("value_range", "cost_range"))
#: a strategy's weight in its side's mix
WEIGHT = Number("weight", 0, 100, 5)
SEED_MAX = 2**32 - 1

#: the page's starting market: sellers half averaging, half learning; buyers averaging
DEFAULTS: dict[str, Any] = {
    "n_sellers": 50,
    "n_buyers": 50,
    "seller_weights": {"averaging": 50, "qlearning": 50},
    "buyer_weights": {"averaging": 100},
    "prices": 5,
    "rounds": 5,
    "period": 10,
    "first": "random",
    "institution": "pairs",
    "schedule": BY_NAME["schedule"].default,
    "value_dist": BY_NAME["value_dist"].default,
    **{name: tuple(BY_NAME[name].default) for name in RANGES},
    "redraw": False,
    "clock": False,
    "teams": 0,
    "common_wallet": False,
    "seller_discount": 1.0,
    "buyer_discount": 1.0,
    **{d.name: d.default for d in pressure.OTHERS},
    "revision": "none",
    "revision_rate": 0.1,
    "selection": 1.0,
    "mutation": 0.0,
    "inherit": "fresh",
    **{name: BY_NAME[name].default for name in _MATCHING},
    "seed": 0,  # the command line's default seed
}


def default_settings() -> dict[str, Any]:
    """A fresh copy of :data:`DEFAULTS` with every registered strategy in each mix."""
    out = dict(DEFAULTS)
    for side in SIDE_NAMES:
        given = DEFAULTS[f"{side}_weights"]
        out[f"{side}_weights"] = {name: int(given.get(name, 0)) for name in strategies.names()}
    return out


def mix_from_weights(side: str, weights: Mapping[str, float]) -> dict[str, float]:
    """Weights normalised to shares summing to 1 (strategies at 0 left out).

    ``ValueError`` naming the side when every weight is 0 or one is negative.
    """
    bad = {k: w for k, w in weights.items() if not float(w) >= 0}
    if bad:
        name, w = next(iter(bad.items()))
        raise ValueError(f"{side} mix: the weight of {name} must be >= 0 (got {w})")
    total = float(sum(float(w) for w in weights.values()))
    if total <= 0:
        raise ValueError(f"{side} mix: every weight is 0; give at least one strategy a weight "
                         "above 0")
    return {name: float(w) / total for name, w in weights.items() if float(w) > 0}


def model_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """MarketModel keyword arguments from the page's settings, checked; ``ValueError`` if bad.

    The message names the parameter and its allowed range, as the command
    line's do.
    """
    _check_integers(settings)
    kwargs: dict[str, Any] = {
        "n_sellers": settings["n_sellers"],
        "n_buyers": settings["n_buyers"],
        "seller_mix": mix_from_weights("seller", settings["seller_weights"]),
        "buyer_mix": mix_from_weights("buyer", settings["buyer_weights"]),
        "prices": settings["prices"],
        "rounds": settings["rounds"],
        "period": settings["period"],
        "first": settings["first"],
        "institution": settings.get("institution", "pairs"),
        "redraw": bool(settings["redraw"]),
        "clock": bool(settings["clock"]),
        "teams": settings["teams"] or None,
        "common_wallet": bool(settings["common_wallet"]),
        **_supply(settings),
        "seed": settings["seed"],
        **_extensions(settings, institutions.get(settings.get("institution", "pairs")).bilateral),
    }
    check({k: v for k, v in kwargs.items() if k != "seed"})
    return kwargs


def _check_integers(settings: Mapping[str, Any]) -> None:
    """The sliders' integers and the seed, each in its range (``ValueError`` naming it)."""
    for key, spec in {**NUMBERS, **MATCHING_NUMBERS}.items():
        value = settings.get(key, DEFAULTS[key])
        if isinstance(value, bool) or not isinstance(value, int) or not (
                spec.lo <= value <= spec.hi):
            raise ValueError(f"{spec.label} must be an integer in [{spec.lo}, {spec.hi}] "
                             f"(got {value!r})")
    seed = settings["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise ValueError(f"seed must be an integer in [0, {SEED_MAX}] (got {seed!r})")


def with_institution(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The settings with institution ``name`` chosen and its first look applied
    (:attr:`~market.sim.institutions.Institution.suggested`: a book's zero-intelligence
    traders on 20 levels); bilateral bargaining's is the page's own first market."""
    out = {**settings, "institution": name}
    suggested = institutions.get(name).suggested
    out["prices"] = suggested.get("prices", DEFAULTS["prices"])
    for side in SIDE_NAMES:
        mix = suggested.get(f"{side}_mix")
        given = ({k: round(100 * v) for k, v in mix.items()} if mix is not None
                 else DEFAULTS[f"{side}_weights"])
        out[f"{side}_weights"] = {k: int(given.get(k, 0)) for k in settings[f"{side}_weights"]}
    return out


def _supply(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Values and costs: a named schedule alone (it fixes them), or drawn from the two
    ranges in one shape for both sides (what ``--distribution`` sets)."""
    schedule = settings.get("schedule", DEFAULTS["schedule"])
    if schedule != DEFAULTS["schedule"]:
        return {"schedule": schedule}
    shape = settings.get("value_dist", DEFAULTS["value_dist"])
    return {**{name: tuple(float(x) for x in settings.get(name, DEFAULTS[name]))
               for name in RANGES},
            "value_dist": shape, "cost_dist": shape}


def _extensions(settings: Mapping[str, Any], pairs: bool) -> dict[str, Any]:
    """The extensions' keywords, only where one is on: a market without them is built as it
    always was. Time pressure and partner choice apply to bilateral pairs only."""
    kwargs: dict[str, Any] = {}
    for key in DISCOUNTS:
        if pairs and settings.get(key, 1.0) != 1.0:
            kwargs[key] = settings[key]
    for key in PRESSURE_SLIDERS:
        if pairs and settings.get(key, 0.0) != 0.0:
            kwargs[key] = settings[key]
    if settings.get("revision", "none") != "none":
        for key in (*REVISION_CHOICES, *REVISION_SLIDERS):
            kwargs[key] = settings[key]
    if pairs and settings.get("matching", "random") != "random":
        for key in _MATCHING:
            kwargs[key] = settings.get(key, DEFAULTS[key])
    return kwargs


def shares_text(weights: Mapping[str, float]) -> dict[str, str]:
    """Each strategy's normalised share as a percentage (``"50%"``), ``"-"`` if all are 0."""
    total = float(sum(float(w) for w in weights.values()))
    return {k: f"{float(w) / total:.0%}" if total > 0 else "-" for k, w in weights.items()}


__all__ = [
    "DEFAULTS",
    "DISCOUNTS",
    "FIRST_MOVERS",
    "INSTITUTIONS",
    "MATCHING_CHOICES",
    "MATCHING_NUMBERS",
    "MATCHING_SLIDERS",
    "MATCHING_SWITCHES",
    "NUMBERS",
    "PRESSURE_SLIDERS",
    "RANGES",
    "REVISION_CHOICES",
    "REVISION_SLIDERS",
    "SUPPLY_CHOICES",
    "SWITCHES",
    "WEIGHT",
    "Number",
    "default_settings",
    "mix_from_weights",
    "model_kwargs",
    "shares_text",
    "with_institution",
]
