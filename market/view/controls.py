"""The market page's controls: Mesa's run controls above the panels, the settings beside.

Run bar: Reset, ▶/❚❚ and Step as in Mesa's ``ModelController``, the step
counter, and the play interval and the render interval (steps per redraw)
as sliders that show their values. The controller is this module's own
(:func:`Controller`) for one reason: Mesa's sleeps the play interval
*between* steps, so a step and its redraw are added to every interval
(about 7.5 steps a second at 100 ms, measured in Chromium); this one keeps
the play interval from one step's start to the next. Sidebar: one control per setting of
:mod:`market.view.settings`, each showing its value; each side's mix lists
every registered strategy with a weight and its normalised share.

Settings apply on Reset, as in Mesa's ``SolaraViz``: every change is
checked at once (:func:`~market.view.settings.model_kwargs`), and only a
valid set reaches the parameters Mesa's Reset builds the model from; until
then the sidebar says what is wrong and Reset keeps the last valid set.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import solara
import solara.lab
from mesa.visualization.utils import force_update

from market.game.rules import SIDE_NAMES
from market.sim import institutions
from market.view.settings import (
    DISCOUNT_MIN,
    DISCOUNT_STEP,
    DISCOUNTS,
    FIRST_MOVERS,
    INSTITUTIONS,
    MATCHING_CHOICES,
    MATCHING_NUMBERS,
    MATCHING_SLIDERS,
    MATCHING_SWITCHES,
    NUMBERS,
    PRESSURE_SLIDERS,
    RANGES,
    REVISION_CHOICES,
    REVISION_SLIDERS,
    SUPPLY_CHOICES,
    SWITCHES,
    WEIGHT,
    model_kwargs,
    shares_text,
    with_institution,
)

#: the play interval's range (ms between steps while playing) and the render interval's
PLAY_MS = (0, 1000, 50)
RENDER_STEPS = (1, 50, 1)


def check(settings: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The model's keyword arguments and no message, or None and what is wrong (one line)."""
    try:
        return model_kwargs(settings), ""
    except ValueError as exc:
        return None, " ".join(str(exc).split())


@solara.component
def Controller(
    model: solara.Reactive[Any],
    model_parameters: solara.Reactive[dict[str, Any]],
    play_interval: solara.Reactive[int],
    render_interval: solara.Reactive[int],
) -> None:
    """Reset, ▶/❚❚ and Step, as Mesa's ``ModelController`` (mesa 3.3) draws and does them,
    with play kept to its interval.

    Step advances the render interval's number of steps, then redraws once
    (Mesa's ``force_update``). Play runs the same in a thread, each advance
    due one play interval after the previous one *started*: the step and its
    redraw happen inside the interval instead of after it. A market slower
    than the interval plays as fast as it can, without racing to catch up.
    """
    playing = solara.use_reactive(False)
    running = solara.use_reactive(True)
    error = solara.use_reactive(None)

    def advance() -> None:
        for _ in range(render_interval.value):
            model.value.step()
            running.value = model.value.running
            if not running.value:
                break
        force_update()

    def play() -> None:
        due = time.monotonic()
        try:
            while running.value and playing.value:
                interval = play_interval.value / 1000
                due += interval
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                elif wait < -interval:  # over a whole interval late: start the count afresh
                    due = time.monotonic()
                if not playing.value:
                    break
                advance()
        except Exception as exc:  # noqa: BLE001 - shown on the page, as Mesa's controller does
            error.value = f"error in step: {exc}"
            traceback.print_exc()

    solara.lab.use_task(play, dependencies=[playing.value, running.value], prefer_threaded=True)

    def reset() -> None:
        error.set(None)
        playing.value = False
        running.value = True
        model.value = model.value.__class__(**model_parameters.value)

    def step() -> None:
        try:
            advance()
        except Exception as exc:  # noqa: BLE001 - shown on the page
            error.value = f"error in step: {exc}"
            traceback.print_exc()

    with solara.Row(justify="space-between"):
        solara.Button(label="Reset", color="primary", on_click=reset)
        solara.Button(label="❚❚" if playing.value else "▶", color="primary",
                      on_click=lambda: playing.set(not playing.value),
                      disabled=not running.value)
        solara.Button(label="Step", color="primary", on_click=step,
                      disabled=playing.value or not running.value)
    if error.value:
        solara.Error(label=error.value)


@solara.component
def RunBar(
    model: solara.Reactive[Any],
    params: solara.Reactive[dict[str, Any]],
    settings: solara.Reactive[dict[str, Any]],
    play_interval: solara.Reactive[int],
    render_interval: solara.Reactive[int],
    steps: int,
) -> None:
    """Reset, play/pause and step, the step counter, the two intervals, and whether the
    sidebar's settings are applied."""
    _, problem = check(settings.value)
    with solara.Card(margin=0), solara.Row(style={"align-items": "center", "flex-wrap": "wrap",
                                                  "gap": "18px"}):
        with solara.Column(style={"min-width": "230px"}):
            Controller(model, params, play_interval, render_interval)
        solara.Text(f"Step: {steps}", style={"font-size": "16px", "font-weight": "bold"})
        with solara.Column(style={"min-width": "260px"}):
            lo, hi, step = PLAY_MS
            solara.SliderInt(f"Play interval: {play_interval.value} ms", value=play_interval,
                             min=lo, max=hi, step=step)
            lo, hi, step = RENDER_STEPS
            n = render_interval.value
            solara.SliderInt(f"Render interval: {n} step{'s' if n > 1 else ''} per redraw",
                             value=render_interval, min=lo, max=hi, step=step)
        with solara.Column(style={"max-width": "420px"}):
            if problem:
                solara.Error(f"Not applied: {problem}. Reset keeps the last valid settings.",
                             dense=True)
            elif params.value != getattr(model.value, "built_with", params.value):
                solara.Info("Settings changed: press Reset to apply them.", dense=True)
            else:
                solara.Text("Settings (sidebar) apply on Reset.", style={"font-size": "13px"})


def bilateral(settings: dict[str, Any]) -> bool:
    """Whether the settings' institution bargains in pairs (where time pressure and partner
    choice apply: their controls are shown only there)."""
    from market.sim import institutions

    return institutions.get(settings.get("institution", "pairs")).bilateral


def _sliders(settings: dict[str, Any], set_value: Callable[[str, Any], None],
             sliders: dict[str, Any]) -> None:
    """A float slider for each of ``sliders`` (its label, range and step), showing its value."""
    for key, spec in sliders.items():
        solara.SliderFloat(f"{spec.label}: {settings[key]:.2f}", value=settings[key],
                           min=spec.lo, max=spec.hi, step=spec.step,
                           on_value=lambda v, key=key: set_value(key, float(v)))


def _choice(settings: dict[str, Any], set_value: Callable[[str, Any], None], key: str,
            choices: dict[str, tuple[str, ...]], label: str = "") -> None:
    """One of ``choices[key]`` as toggle buttons, ``label`` above them if given."""
    if label:
        solara.Text(label, style={"font-size": "13px"})
    solara.ToggleButtonsSingle(value=settings[key], values=list(choices[key]),
                               on_value=lambda v: set_value(key, v), dense=True)


@solara.component
def MarketCard(settings: dict[str, Any], set_value: Callable[[str, Any], None]) -> None:
    """Population sizes, game sizes, period, first mover, switches, teams and the seed."""
    with solara.Card("Market", margin=0):
        for key in ("n_sellers", "n_buyers"):
            spec = NUMBERS[key]
            solara.InputInt(f"{spec.label} ({spec.lo}-{spec.hi})", value=settings[key],
                            on_value=lambda v, key=key: set_value(key, v))
        for key in ("prices", "rounds", "period"):
            spec = NUMBERS[key]
            solara.SliderInt(f"{spec.label}: {settings[key]}", value=settings[key],
                             min=spec.lo, max=spec.hi, step=spec.step,
                             on_value=lambda v, key=key: set_value(key, v))
        for key, label, choices in (("institution", "Institution: how traders meet",
                                     INSTITUTIONS), ("first", "First mover", FIRST_MOVERS)):
            with solara.Column(gap="2px"):  # the label above its buttons, not beside them
                solara.Text(label, style={"font-size": "13px"})
                solara.ToggleButtonsSingle(value=settings.get(key, choices[0]),
                                           values=list(choices),
                                           on_value=lambda v, key=key: set_value(key, v),
                                           dense=True)
        why = institutions.get(settings["institution"]).suggested_why
        if why:  # what choosing it set, and why
            solara.Text(f"Started with {why}; change them as you like.",
                        style={"font-size": "13px"})
        spec = NUMBERS["teams"]
        teams = settings["teams"]
        solara.SliderInt(f"Teams per side: {teams or 'none'}", value=teams, min=spec.lo,
                         max=spec.hi, step=spec.step, on_value=lambda v: set_value("teams", v))
        for key, label in SWITCHES.items():
            solara.Checkbox(label=label, value=bool(settings[key]),
                            on_value=lambda v, key=key: set_value(key, v))
        if bilateral(settings):  # time pressure prices offers: pairs only
            for key, label in DISCOUNTS.items():
                solara.SliderFloat(f"{label}: {settings[key]:.2f}", value=settings[key],
                                   min=DISCOUNT_MIN, max=1.0, step=DISCOUNT_STEP,
                                   on_value=lambda v, key=key: set_value(key, float(v)))
            _sliders(settings, set_value, PRESSURE_SLIDERS)
        solara.InputInt("Seed", value=settings["seed"], on_value=lambda v: set_value("seed", v))


@solara.component
def SupplyCard(settings: dict[str, Any], set_value: Callable[[str, Any], None]) -> None:
    """Buyers' values and Sellers' costs: drawn from two ranges in a shape, or a named
    schedule (which fixes them: the ranges and the shape are then not asked for)."""
    with solara.Card("Values and costs", margin=0):
        _choice(settings, set_value, "schedule", SUPPLY_CHOICES)
        if settings["schedule"] != SUPPLY_CHOICES["schedule"][0]:
            solara.Text("The schedule fixes every value and cost.",
                        style={"font-size": "13px"})
            return
        for key, spec in RANGES.items():
            lo, hi = settings[key]
            solara.SliderRangeInt(f"{spec.label}: {lo:g} to {hi:g}", value=(int(lo), int(hi)),
                                  min=spec.lo, max=spec.hi, step=spec.step,
                                  on_value=lambda v, key=key: set_value(key, tuple(v)))
        _choice(settings, set_value, "value_dist", SUPPLY_CHOICES, "Drawn")


@solara.component
def RevisionCard(settings: dict[str, Any], set_value: Callable[[str, Any], None]) -> None:
    """Strategy revision at each period's end: protocol, rates, what adopted learners keep."""
    with solara.Card("Strategy revision", margin=0):
        _choice(settings, set_value, "revision", REVISION_CHOICES)
        if settings["revision"] == "none":
            solara.Text("Traders keep their strategies.", style={"font-size": "13px"})
        else:
            _sliders(settings, set_value, REVISION_SLIDERS)
            _choice(settings, set_value, "inherit", REVISION_CHOICES,
                    "Adopted learners start from")


@solara.component
def PartnersCard(settings: dict[str, Any], set_value: Callable[[str, Any], None]) -> None:
    """Partner choice in bilateral bargaining: the rule, beta, gamma, a Buyer's memory, the
    service order and whether learners see loyalty."""
    if not bilateral(settings):  # partners are chosen in bilateral bargaining only
        return
    with solara.Card("Partner choice", margin=0):
        _choice(settings, set_value, "matching", MATCHING_CHOICES)
        if settings["matching"] == "random":
            solara.Text("Random pairs every step.", style={"font-size": "13px"})
            return
        _sliders(settings, set_value, MATCHING_SLIDERS)
        for key, spec in MATCHING_NUMBERS.items():
            solara.SliderInt(f"{spec.label}: {settings[key]}", value=settings[key],
                             min=spec.lo, max=spec.hi, step=spec.step,
                             on_value=lambda v, key=key: set_value(key, int(v)))
        _choice(settings, set_value, "service", MATCHING_CHOICES,
                "A Seller serves her visitors in")
        for key, label in MATCHING_SWITCHES.items():
            solara.Checkbox(label=label, value=bool(settings[key]),
                            on_value=lambda v, key=key: set_value(key, v))


@solara.component
def MixCard(side: str, weights: dict[str, int], set_weight: Callable[[str, int], None]) -> None:
    """Every registered strategy with its weight and normalised share on one side."""
    shares = shares_text(weights)
    with solara.Card(f"{side.capitalize()} strategies", margin=0):
        solara.Text("weight → share of the side", style={"font-size": "13px"})
        for name, w in weights.items():
            solara.SliderInt(f"{name}: {w} → {shares[name]}", value=int(w), min=WEIGHT.lo,
                             max=WEIGHT.hi, step=WEIGHT.step,
                             on_value=lambda v, name=name: set_weight(name, v))
        if shares and all(s == "-" for s in shares.values()):
            solara.Error(f"Every {side} weight is 0: give at least one strategy a weight "
                         "above 0.", dense=True)


@solara.component
def MarketSidebar(
    params: solara.Reactive[dict[str, Any]],
    settings: solara.Reactive[dict[str, Any]],
) -> None:
    """The sidebar: the market's settings, then each side's mix."""
    current = settings.value

    def set_value(key: str, value: Any) -> None:
        new = (with_institution(settings.value, value) if key == "institution"
               else {**settings.value, key: value})
        settings.set(new)
        kwargs, _ = check(new)
        if kwargs is not None:
            params.set(kwargs)

    def weight_setter(side: str) -> Callable[[str, int], None]:
        def set_weight(name: str, value: int) -> None:
            key = f"{side}_weights"
            set_value(key, {**settings.value[key], name: int(value)})
        return set_weight

    with solara.Column(gap="12px"):
        MarketCard(current, set_value)
        SupplyCard(current, set_value)
        RevisionCard(current, set_value)
        PartnersCard(current, set_value)
        for side in SIDE_NAMES:
            MixCard(side, current[f"{side}_weights"], weight_setter(side))


__all__ = ["Controller", "MarketSidebar", "RunBar", "check"]
