"""A user's rule keeps its promises before it plays: the contract, in brief, on sample turns.

The registered strategies pass the shared contract test
(``tests/strategies/test_contract.py``) over random games; a user's rule,
named on a command line or in Python, meets the same promises before any
run starts (:func:`check_rule`, called as :mod:`strategies.registry` loads
it), as Python on a few dozen sample turns, each broken promise one line
naming the strategy and the turn:

============================  ================================================
promise                       what breaks it
============================  ================================================
draws from its generator      a call to ``np.random`` or Python's ``random``
returns                       no return within :data:`SAMPLE_SECONDS`
a whole level                 a float, NaN, a bool
on the grid                   a target below 1 or above ``turn.prices``
individually rational         an offer or an acceptance outside its range
(the classifier's default)
============================  ================================================
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from market.errors import StrategyFailed, failed, reraise_signal
from market.game.moves import bilateral_view
from market.game.rules import SELLER, Turn
from strategies.base import Strategy
from strategies.compiled import form


def _outside_draws(function: Any) -> str:
    """What ``function`` draws from other than the generator it is given, if anything:
    ``np.random``, Python's ``random`` or a function of theirs, named as a global (numba
    runs them on a generator of its own, which no seed of ours reaches)."""
    import dis
    import random as std_random

    py = getattr(function, "py_func", function)
    code = getattr(py, "__code__", None)
    if code is None:
        return ""
    glb = getattr(py, "__globals__", {})
    codes, found = [code], ""
    while codes and not found:
        c = codes.pop()
        codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        prev = None
        for ins in dis.get_instructions(c):
            value = glb.get(ins.argval) if ins.opname == "LOAD_GLOBAL" else None
            if value is np.random or value is std_random:
                found = f"{ins.argval}"
            elif (ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and ins.argval == "random"
                  and prev is np):
                found = "np.random"
            elif callable(value) and str(getattr(value, "__module__", "") or "").startswith(
                    ("numpy.random", "random")):
                found = f"{ins.argval} ({value.__module__})"
            prev = value if ins.opname == "LOAD_GLOBAL" else None
            if found:
                break
    return found


#: how long a user's target may take, as Python, on a sample turn
SAMPLE_SECONDS = 2.0


def _within(seconds: float, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``, or ``TimeoutError`` once the lines of ``function``'s own file
    have run ``seconds`` (a loop that never ends is stopped, in this thread, by no signal).
    Other code it calls runs untraced and unclocked: a compiled helper loading, or
    compiling, on its first call takes what it takes, on a busy machine too."""
    own = getattr(getattr(function, "__code__", None), "co_filename", None)
    spent, last = [0.0], [None]

    def lines(frame: Any, event: str, arg: Any) -> Any:
        now = time.monotonic()
        if last[0] is not None:
            spent[0] += now - last[0]
            if spent[0] > seconds:
                raise TimeoutError
        last[0] = now
        return lines

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == own:
            return lines
        last[0] = None  # the time until the rule's next line is the callee's, not counted
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        return function(*args)
    finally:
        sys.settrace(previous)


#: sample games a user's rule is tried on before it plays: (P, T)
SAMPLE_GAMES = ((5, 3), (9, 2), (21, 5))


def check_rule(cls: type[Strategy]) -> None:
    """A user's rule, tried as Python on sample turns before it plays (the contract the
    registered strategies pass in the tests, in brief): its draws only from the generator
    it is given, a whole level on the grid within :data:`SAMPLE_SECONDS`, and, if its
    classifier says it is individually rational, no offer or acceptance outside its range.
    A broken promise is one line naming the strategy (numba, given a float target, failed
    deep inside the engine, blaming the machine; an off-grid target was silently clamped
    and a promised-rational rule traded at a loss)."""
    f = form(cls)
    if f is None or f.shape != "rule":
        return
    for function in f.functions:
        source = _outside_draws(function) if function is not None else ""
        if source:
            raise StrategyFailed(f"strategy {f.name!r}: its rule draws from {source}, which "
                                 "no seed reaches; draw from the generator it is given "
                                 "(rng.random(), rng.integers(lo, hi))")
    target, accepts = (getattr(g, "py_func", g) for g in f.functions[:2])  # not respond
    rational = bool(cls.classifier.get("individually_rational", True))
    for turn in _sample_turns():
        try:
            value = _within(SAMPLE_SECONDS, target, turn, np.random.default_rng(0))
            taken = (turn.offer > 0 and accepts is not None
                     and bool(_within(SAMPLE_SECONDS, accepts, turn, value)))
        except TimeoutError:
            raise StrategyFailed(f"strategy {f.name!r}: its rule did not return within "
                                 f"{SAMPLE_SECONDS:g} s on a sample turn (a loop that never "
                                 "ends?)") from None
        except Exception as exc:  # its own code: one line naming it
            reraise_signal(exc)
            raise failed(repr(f.name), turn.move, exc) from None
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise StrategyFailed(f"strategy {f.name!r}: its target returned {value!r:.40} "
                                 f"({type(value).__name__}), not a whole price level; return "
                                 "an int (1 .. turn.prices)")
        broken = _broken_promise(turn, int(value), taken, rational)
        if broken:
            raise StrategyFailed(f"strategy {f.name!r}: {broken} (a sample turn: {turn})")


def _sample_turns() -> list[Turn]:
    """The same few dozen turns every time: each side, the opening, later moves, final
    answers, on :data:`SAMPLE_GAMES`, with acceptable ranges of every width; every other one
    as bilateral bargaining shows it (:func:`~market.game.moves.bilateral_view`), the rest as
    an order book could (its best quote on the mover's side, the last period's trades, the
    quiet rounds)."""
    rng = np.random.default_rng(20260101)
    books = np.random.default_rng(20261129)  # its own draws: the turns above stay the same
    turns = []
    for P, T in SAMPLE_GAMES:
        for k in range(16):
            side = k % 2
            move = 0 if k < 4 else int(rng.integers(1, 2 * T))
            cut = int(rng.integers(1, P + 1))
            lo, hi = (cut, P) if side == SELLER else (1, cut)
            offer = 0 if move == 0 else int(rng.integers(1, P + 1))
            own = 0 if move < 2 else int(rng.integers(1, P + 1))
            prev = 0 if move < 3 else int(rng.integers(1, P + 1))
            if k % 2 == 0:
                view = bilateral_view(own, move)
            else:
                low, high = np.sort(books.integers(0, P + 1, 2))
                view = (int(books.integers(0, P + 1)), int(max(low, 1)) if high else 0, int(high),
                        int(books.integers(0, T + 1)))
            turns.append(Turn(side, move, P, T, offer, own, prev, lo, hi, 1.0, *view))
    return turns


def _broken_promise(turn: Turn, target: int, accepted: bool, rational: bool) -> str:
    """What a rule's target (and acceptance) at ``turn`` breaks, "" if nothing."""
    final = turn.move > 0 and (turn.move - 1) // 2 == turn.rounds - 1
    if not final and not 1 <= target <= turn.prices:
        return (f"its target {target} is off the grid (levels 1 .. turn.prices = "
                f"{turn.prices}): it would be clamped, silently")
    if not rational:
        return ""
    says = ("its classifier says it is individually rational (Classifier(), the default), "
            "but")
    seller = turn.side == SELLER
    if not final and (target < turn.lo if seller else target > turn.hi):
        return (f"{says} it offers level {target} outside its range ({turn.lo} .. {turn.hi}): "
                "a deal there is a loss; keep it inside (strategies.rule_based.bounds), or "
                "say Classifier(individually_rational=False)")
    if accepted and (turn.offer < turn.lo if seller else turn.offer > turn.hi):
        return (f"{says} it accepts level {turn.offer} outside its range ({turn.lo} .. "
                f"{turn.hi}); or say Classifier(individually_rational=False)")
    return ""


__all__ = ["SAMPLE_GAMES", "SAMPLE_SECONDS", "check_rule"]
