"""The compiled two-agent game: the strategies' rules generated into the game's loops, and the
one entry point that compiles them.

The game's compiled loops are templates in the game layer
(:mod:`market.game.loops`: a batch of negotiations to their end;
:mod:`market.game.fastgame`: the environments' step), written against the
stand-in calls of :mod:`market.game.dispatch`. :func:`compiled_module`
generates the module that binds them to the strategies' compiled forms
(:mod:`strategies.compiled`: every built-in strategy and any user's rule),
loads it from numba's cache or compiles it, with one notice while it
compiles. :func:`negotiate` plays a batch of two-agent negotiations in it.
The tournament, the report and the environments call this module; none of
them needs the market (nothing here imports :mod:`market.sim` or Mesa), and
the market's engine (:mod:`market.sim.engine`) adds its own step template to
the same generation.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence

import numpy as np

from market.compiled import build, jit
from market.errors import CompileError, StrategyFailed, failed, reraise_signal
from market.game import fastgame, loops
from market.game import protocol as lockstep
from market.game.pressure import Pressure
from market.game.protocol import IllegalAction, Side
from market.game.record import BatchRecord
from market.game.rules import Protocol
from market.processes import compiled_code
from strategies import compiled, registry
from strategies.base import KernelState, Strategy
from strategies.stores import stores

#: the two-agent game's compiled loops: a batch of negotiations, the environments' step
#: (numba compiles each on its first call)
GAME_TEMPLATES = (loops, fastgame)

def forms_for(strategies: Sequence[Strategy] = ()) -> list[compiled.Form]:
    """The forms a module is generated for: every compiled strategy of the package (by
    name), then those of ``strategies`` from elsewhere (a user's), each form once."""
    return list(_forms(tuple(registry.STRATEGIES.values()),
                       tuple({type(s): None for s in strategies})))


@functools.lru_cache(maxsize=64)
def _forms(registered: tuple[type[Strategy], ...], extra: tuple[type[Strategy], ...]
           ) -> tuple[compiled.Form, ...]:
    """:func:`forms_for`, by the classes registered and those of the strategies (the same
    classes, the same forms: a market's build looks them up, 0.05 ms of a batch run's 5)."""
    seen: dict[tuple, compiled.Form] = {}
    package = sorted((cls for cls in registered if not registry.from_user(cls)),
                     key=lambda c: c.name)
    for cls in (*package, *sorted(extra, key=lambda c: (c.name, c.__qualname__))):
        f = compiled.form(cls)
        if f is not None and f.key not in seen:
            seen[f.key] = f
    return tuple(seen.values())


#: what a generated module's entry points are built by: ``calls(module)`` gives each entry a
#: call on tiny arguments (:func:`market.compiled.build.build`)
Calls = Callable[[types.ModuleType], dict[str, Callable[[], object]]]


def compiled_module(strategies: Sequence[Strategy] = (),
                    on_compile: Callable[[], None] | None = None,
                    calls: Calls | None = None,
                    templates: Sequence[types.ModuleType] = GAME_TEMPLATES,
                    label: str = "") -> types.ModuleType:
    """The generated module that runs these strategies (and every built-in one) compiled,
    built on first use (``on_compile`` is called first, only then; by default a notice on
    stderr): each strategy's own module (:func:`strategies.compiled.batch_module`), then the
    entries ``calls`` builds (default :func:`game_calls`: ``negotiate_rows``; the market
    adds its own template and entry; others compile on their first call). ``templates``:
    the loops the module holds (:data:`GAME_TEMPLATES`, the two-agent game's). A rule numba
    cannot compile is a :class:`~market.errors.CompileError` naming its strategy."""
    if jit.numba is None:
        raise jit.missing("the compiled market engine")
    forms = forms_for(strategies)
    module = compiled.engine_module(forms, tuple(templates))
    wanted = (calls or game_calls)(module)
    built = module.__dict__.get("_built", set())
    if getattr(module, "_forms_built", False) and built >= set(wanted):
        return module
    extra = [f.name for f in forms if f.name not in registry.STRATEGIES
             or registry.from_user(registry.STRATEGIES[f.name])]
    started: list[float] = []
    stage = ["built-in"]

    def announce() -> None:
        if started:
            return
        started.append(time.perf_counter())
        if on_compile is not None:
            on_compile()
        else:
            print(compiling_words(extra, stage[0] == "built-in", bool(wanted), label),
                  file=sys.stderr, flush=True)

    with _lock:
        try:
            for f in forms:  # each rule alone first, so that a failure names it
                if f.name in extra:
                    stage[0] = "more"
                try:
                    compiled.batch_module(f, announce)
                except CompileError as exc:
                    if f.name in extra:  # a user's rule: it names the rule
                        raise
                    raise CompileError(f"numba cannot compile the market engine on this "
                                       f"machine: {exc}") from None  # not the rule's fault
            stage[0] = "more"
            build.build(module, wanted, announce)
        except (CompileError, StrategyFailed):
            raise
        except Exception as exc:
            reraise_signal(exc)
            raise CompileError(f"numba cannot compile the market engine on this machine "
                               f"({type(exc).__name__}: {jit.first_line(exc)})") from exc
        module._forms_built = True  # type: ignore[attr-defined]
    if started and on_compile is None:  # the wait's end, as its start was said
        what = (label or GAME_LABEL) if wanted else "the strategies' rules"
        print(f"compiled {what} in {time.perf_counter() - started[0]:.0f} s",
              file=sys.stderr, flush=True)
    return module


def ensure_compiled(on_compile: Callable[[], None] | None = None) -> None:
    """Build the built-in strategies' two-agent game (once per build)."""
    compiled_module((), on_compile)


#: what the engine of the two-agent game is called where its compile is said
GAME_LABEL = "the two-agent game's engine"


#: what a first compile takes on an idle 2-core machine, measured: the built-in rules' engine
#: (or an institution's step of them), and one with rules of a user's beside built-ins
#: already compiled: its base, then each of the user's rules more (1 rule 11 s, 4 rules 16 s,
#: 16 rules 33 s, 32 rules 58 s)
BUILT_IN_SECONDS, USER_BASE_SECONDS, USER_RULE_SECONDS = 20.0, 10.0, 1.5
#: the user's rules a notice names before it counts the rest
NAMED_RULES = 3


def compiling_words(extra: Sequence[str], built_ins: bool, loops: bool = True,
                    label: str = "") -> str:
    """The notice of a first compile: what compiles and about how long it takes
    (``BUILT_IN_SECONDS`` for the built-in rules or an institution's step of them, once
    per build; ``USER_BASE_SECONDS`` and ``USER_RULE_SECONDS`` a rule for a set with new
    rules of a user's, so that a mix of many says minutes, not seconds; the
    two-agent game's loops alone, a few seconds). ``loops``: the engine's loops too, not
    only the rules (an environment compiles its own step on use); ``label``: what the
    engine is (one per institution: a batch over several compiles one each, and says
    which), by default the two-agent game's."""
    what = (label or GAME_LABEL) if loops else "the strategies' rules"
    if extra:
        more = len(extra) - NAMED_RULES
        what += " with " + ", ".join(extra[:NAMED_RULES]) + (
            f" and {more:,} more" if more > 0 else "")
    if built_ins or (label and loops and not extra):
        seconds = BUILT_IN_SECONDS + USER_RULE_SECONDS * len(extra)
    elif extra:
        seconds = USER_BASE_SECONDS + USER_RULE_SECONDS * len(extra)
    else:
        return f"compiling {what} (kept for later runs; a few seconds)"
    return f"compiling {what} (kept for later runs; {_about(seconds)})"


def _about(seconds: float) -> str:
    """A duration as a notice says it: about so many seconds (to 5) or minutes."""
    if seconds < 90:
        return f"about {5 * round(seconds / 5):.0f} seconds"
    return f"about {round(seconds / 60):,} minutes"


_lock = threading.Lock()


def game_calls(module: types.ModuleType) -> dict[str, Callable[[], object]]:
    """The two-agent game's entry, to be called on one negotiation of a tiny game (the
    environments' ``step`` compiles on use); its arguments are made only when it is."""
    return {"negotiate_rows": lambda: _tiny_game(module)}


def _tiny_game(module: types.ModuleType) -> None:
    n = 2
    i = np.zeros(n, dtype=np.int64)
    store, _ = stores([KernelState(), KernelState()])  # one strategy a side
    seat = (i.copy(), i.copy(), np.ones(n, np.int64), np.full(n, 2, np.int64))
    module.negotiate_rows((2, 1), i.copy(), seat, seat, np.full(n, -1, np.int64), i.copy(),
                          np.zeros(2, np.int64), 1, store.arrays, np.random.default_rng(0),
                          Pressure())


def rule_failed(strategies: Sequence[Strategy], exc: Exception) -> Exception:
    """What to raise when a compiled call raised ``exc``: the built-in rules raise nothing, so
    it came from a user's rule; said in one line naming the users' strategies present (numba
    does not say which row raised). ``exc`` itself when no user's strategy is there (a bug
    of ours: its traceback)."""
    reraise_signal(exc)
    users = sorted({getattr(s, "name", "") or type(s).__name__ for s in strategies
                    if registry.from_user(type(s))})
    if not users:
        return exc
    return failed(" or ".join(repr(u) for u in users), None, exc)


def illegal(strategy: Strategy, move: int) -> IllegalAction:
    """The error of a compiled strategy that played an action the rules forbid."""
    name = getattr(strategy, "name", "") or type(strategy).__name__
    return lockstep.illegal(name, move)


def negotiate(protocol: Protocol, seller: Side, buyer: Side, first: np.ndarray | int,
              rng: np.random.Generator, time_left: np.ndarray | None = None) -> BatchRecord:
    """:func:`market.game.protocol.negotiate`, compiled when every strategy has a compiled form.

    The same record from the same generator either way (nothing learns
    here: learners decide on copies of their tables). For callers that run
    negotiations outside a market: the tournament, the report.
    """
    strategies = (*seller.strategies, *buyer.strategies)
    n = len(seller.group)
    if (not all(compiled.has_form(s) for s in strategies) or jit.numba is None
            or n != len(buyer.group)):
        return lockstep.negotiate(protocol, seller, buyer, first, rng, time_left)
    module = compiled_module(strategies)
    kinds = np.array([compiled.kind_in(module, s) for s in strategies], dtype=np.int64)
    store, _ = stores([s.kernel_state() for s in strategies])
    opens = np.empty(n, dtype=np.int64)  # writable: numba types a read-only view (a
    opens[:] = first  # broadcast scalar) apart, and compiled the whole loop again for it
    tl = (np.full(n, -1, dtype=np.int64) if time_left is None
          else np.ascontiguousarray(time_left, dtype=np.int64))

    def seat(side: Side) -> tuple[np.ndarray, ...]:
        return tuple(np.ascontiguousarray(a, dtype=np.int64)
                     for a in (side.group, side.member, side.lo, side.hi))

    try:
        with compiled_code():
            actions, level, n_moves, bad, bad_g = module.negotiate_rows(
                (protocol.prices, protocol.rounds), opens, seat(seller), seat(buyer), tl,
                np.zeros(n, np.int64), kinds, len(seller.strategies), store.arrays, rng,
                protocol.pressure)
    except Exception as exc:
        raise rule_failed(strategies, exc) from exc
    if bad >= 0:
        raise illegal(strategies[bad_g], bad)
    return BatchRecord(protocol, actions, opens.astype(np.int8), level, n_moves)

