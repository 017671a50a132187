"""Every compiled form of a strategy, derived from its one rule: the code the engines run.

A strategy writes its decision once, as compiled code for one negotiation
row (a rule-based strategy's ``target``, :mod:`strategies.rule_based`) or,
for a table player, for the rows of one population (``decide_rows``, and
``learn_rows`` if it learns). Nothing else is written by hand: this module
*generates* the rest from the strategies themselves, in two layers, both
the one switch by kind of :data:`market.game.dispatch.SWITCH`.

- A *form module* per strategy (:func:`form_module`): the rule inlined into
  the switch's entry points (``decide`` over a population's rows, ``learn``
  if it learns, and ``decide_rule`` for one row of a deterministic rule,
  scalars only), so the per-row calls cost nothing. A strategy's batch
  decision (:meth:`Compiled.act`: the lockstep path, the two-agent game)
  calls it from Python; every engine calls the same compiled code.
- An *engine module* per set of strategies (:func:`engine_module`): the
  compiled loops that run negotiations (the two-agent game's
  :mod:`market.game.loops`, and whatever loops a caller adds: the market's
  step, the environments') and the switch that calls each strategy's form
  module by number (a *kind*), inlined into the loops. numba links the form
  modules' machine code into the loops and optimises them as one, so a rule
  is still inlined where the loops call it (a user's runs at a built-in's
  speed).

Why two layers: each form module is compiled once per build and cached,
so a new strategy (a user's rule) compiles its own module and the loops
(5-6 s on a 2-core machine), never the other rules again (the built-ins
take about 15 s, once). Why generated: numba can call functions held in a
list only through a pointer (10.9 ns a call measured, against 0.8 ns
inlined: a 50,000-trader step would slow by a quarter), while a switch
compiles to direct calls. A generated file is named by its text, the functions
it binds and a user's files it compiles in (:func:`market.compiled.build.module`),
inside the build's folder, so a cache can never play an old rule.

Kinds are numbered per engine module; two classes with the same rule
(Boulware and Conceder differ only in a parameter) share one kind and one
form module. An unknown kind plays an illegal action (-1), in both
layers, which every caller refuses, naming the strategy: it can never fall
through to another rule.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from market.compiled import build, jit
from market.compiled.jit import njit
from market.errors import CompileError, StrategyFailed, reraise_signal
from market.game import buffers, dispatch
from market.game.record import BatchRecord
from market.game.rules import Observation, Turn
from strategies.base import (
    KernelState,
    Strategy,
)
from strategies.stores import Store, stores


# --- what a class compiles to --------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    """The compiled decision of a strategy class: its functions, by role.

    ``rule``: a rule-based strategy's ``(target, accepts)``, and its ``respond``
    if it learns from a book's public events (ZIP); ``table``: a
    table player's ``(decide_rows, learn_rows, decide_one)`` (the last two
    may be None). Two classes with the same functions have equal forms and
    share one kind. ``deterministic``: draws nothing (so a market of such
    strategies may play each negotiation to its end before the next).
    """

    shape: str
    functions: tuple[Any, ...]
    deterministic: bool
    name: str

    @property
    def hears(self) -> bool:
        """Whether it states a ``respond``: it hears a book's public events (ZIP)."""
        return self.shape == "rule" and len(self.functions) > 2

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two forms one: their functions and whether they draw (not their
        names: Boulware and Conceder share one)."""
        return (self.shape, self.deterministic, *(_py(f) for f in self.functions))

    @property
    def identity(self) -> str:
        """The key in words, for a generated file's header: the same whichever class (and
        name) reached the form first, and wherever its file lies (a user's module is named
        by its path), so the file's digest is too."""
        fn = _py(self.functions[0])
        draws = "deterministic" if self.deterministic else "stochastic"
        return f"{self.shape} {fn.__qualname__} ({draws})"


def _py(f: Any) -> Any:
    """The Python function under a numba dispatcher (or the function itself)."""
    return getattr(f, "py_func", f)


def form(cls: type[Strategy]) -> Form | None:
    """The compiled form of ``cls``; None if it decides (or learns) in Python only.

    A class that overrides :meth:`Compiled.act` or :meth:`Compiled.learn` decides
    in Python, whatever it inherits: it runs on the lockstep path, never on a
    parent's compiled rule.
    """
    if not (isinstance(cls, type) and issubclass(cls, Compiled)):
        return None
    if cls.act is not Compiled.act or cls.learn is not Compiled.learn:
        return None
    return _form_of(cls)


def _form_of(cls: type[Compiled]) -> Form | None:
    """The compiled functions ``cls`` states or inherits (what ``super().act`` runs)."""
    stochastic = bool(cls.classifier.get("stochastic", False))
    target = getattr(cls, "target", None)
    if target is not None:
        respond = getattr(cls, "respond", None)
        functions = (target, cls.accepts) if respond is None else (target, cls.accepts, respond)
        return Form("rule", functions, not stochastic, cls.name or cls.__name__)
    if cls.decide_rows is not None:
        return Form("table", (cls.decide_rows, cls.learn_rows, cls.decide_one),
                    not stochastic and cls.decide_one is not None, cls.name or cls.__name__)
    return None


def has_form(strategy: Strategy | type[Strategy]) -> bool:
    """Whether a strategy (or class) runs compiled."""
    cls = strategy if isinstance(strategy, type) else type(strategy)
    return form(cls) is not None


# --- the generated module ----------------------------------------------------------------------
_RULE_ROWS = '''
# --- the rule kinds' rows, generated from their targets and accept rules -----------------------
from market.game.moves import bilateral_view as _bilateral_view  # noqa: E402
from market.game.rules import Turn as _Turn  # noqa: E402
from strategies.base import PARAMS as _PARAMS  # noqa: E402
from strategies.base import param_at as _param_at  # noqa: E402
from strategies.rule_based import action as _action  # noqa: E402


@_njit(cache=True, inline="always")
def _target(kind, turn, rng):
    """The rule kinds' targets, by kind."""
{target_cases}
    return 0


@_njit(cache=True, inline="always")
def _accepts(kind, turn, target):
    """The rule kinds' accept rules, by kind."""
{accepts_cases}
    return False


@_njit(cache=True, inline="always")
def _rules(kind, side, move, game, rows, table, seat, st, g, rng, out):
    """A rule kind's decision for each of ``rows``, in order."""
    P, T = game
    last, prev, first = table
    lo, hi, member, book = seat[0], seat[1], seat[2], seat[5]
    fstore, istore, layout, config = st
    with_param = layout[g, _PARAMS + 2] > 0
    bilateral = book[0] < 0  # no book
    for r in rows:
        param = fstore[_param_at(layout, g, member[r], 0)] if with_param else 0.0
        own = last[side, r]
        if bilateral:
            own_best, low, high, quiet = _bilateral_view(own, move)
        else:
            own_best, low, high, quiet = book[side], book[2], book[3], book[4]
        turn = _Turn(side, move, P, T, last[1 - side, r], own, prev[1 - side, r], lo[r],
                     hi[r], param, own_best, low, high, quiet)
        target = _target(kind, turn, rng)
        out[r] = _action(turn, target, _accepts(kind, turn, target))


@_njit(cache=True, inline="always")
def _target_one(kind, turn):
    """The deterministic rule kinds' targets, by kind: they draw nothing, so no generator."""
{one_target_cases}
    return 0
'''

_HEADER = '''"""Generated by strategies.compiled for the kinds {kinds}; do not edit.

Its name is the digest of its text, of what it binds and of the users' files
compiled in: another rule makes another file.
"""

from __future__ import annotations

'''


def _inline(f: Callable[..., Any]) -> Any:
    """``f`` as a function numba inlines where it is called (whatever its own decorator)."""
    return njit(inline="always")(_py(f))


def _source(forms: Sequence[Form]) -> tuple[str, dict]:
    """A form module's text: the switch (:data:`market.game.dispatch.SWITCH`), each entry its
    own cached function, whose cases inline the forms' rules; and the objects it is given
    (the forms' functions)."""
    bound: dict[str, Any] = {}
    targets, one_targets, accepts, dec, learn, respond = [], [], [], [], [], []
    rule_kinds = [k for k, f in enumerate(forms) if f.shape == "rule"]
    one_rules = [k for k in rule_kinds if forms[k].deterministic]
    if rule_kinds:
        dec.append(f"if {_any(rule_kinds)}:\n        _rules(kind, side, move, game, rows, "
                   "table, seat, st, g, rng, out)\n        return")
    sharing: dict[Any, list[int]] = {}  # one case per accept rule, whoever shares it
    for k in rule_kinds:
        sharing.setdefault(_py(forms[k].functions[1]), []).append(k)
    for kinds in sharing.values():
        bound[f"_accepts_{kinds[0]}"] = _inline(forms[kinds[0]].functions[1])
        accepts.append(f"if {_any(kinds)}:\n        return _accepts_{kinds[0]}(turn, target)")
    for k, f in enumerate(forms):
        if f.hears:
            bound[f"_respond_{k}"] = _inline(f.functions[2])
            respond.append(f"if kind == {k}:\n        _respond_{k}(side, event, member, limit, "
                           "active, st, g, rng)\n        return")
        if f.shape == "rule":
            bound[f"_target_{k}"] = _inline(f.functions[0])
            targets.append(f"if kind == {k}:\n        return _target_{k}(turn, rng)")
            if f.deterministic:
                one_targets.append(f"if kind == {k}:\n        return _target_{k}(turn, None)")
            continue
        decide_rows, learn_rows, _ = f.functions
        bound[f"_decide_{k}"] = _inline(decide_rows)
        dec.append(f"if kind == {k}:\n        _decide_{k}(side, move, game, rows, table, "
                   "seat, st, g, rng, out)\n        return")
        if learn_rows is not None:
            bound[f"_learn_{k}"] = _inline(learn_rows)
            learn.append(f"if kind == {k}:\n        _learn_{k}(side, game, rows, record, "
                         "member, reward, time_left, loyal, st, g)\n        return")
    rule_one = ([f"if {_any(one_rules)}:\n    target = _target_one(kind, turn)\n    return "
                 "_action(turn, target, _accepts(kind, turn, target))"] if one_rules else [])
    rules = (_RULE_ROWS.format(target_cases=_cases(targets), accepts_cases=_cases(accepts),
                               one_target_cases=_cases(one_targets)) if rule_kinds else "")
    return _HEADER.format(kinds=_names(forms)) + _switch(
        forms, dispatch.OWN, bound, rules=rules, dec=dec, rule_one=rule_one, learn=learn,
        respond=respond), bound


def _switch_source(forms: Sequence[Form], templates: Sequence[types.ModuleType]
                   ) -> tuple[str, dict]:
    """An engine module's text: the loops of ``templates``, and the switch, inlined into them,
    whose cases call each kind's own form module (:func:`form_module`, where the rule is
    inlined) as its kind 0 (``kind - k``: typed as the Python call's, so both share one
    compile)."""
    bound: dict[str, Any] = {}
    dec, one, learn, rule_one, respond = [], [], [], [], []
    for k, f in enumerate(forms):
        own = form_module(f)
        bound[f"_decide_{k}"] = own.decide
        dec.append(f"if kind == {k}:\n        _decide_{k}(kind - {k}, side, move, game, rows, "
                   "table, seat, st, g, rng, out)\n        return")
        if f.deterministic and f.shape == "rule":  # scalars only: no reference counting
            bound[f"_one_{k}"] = own.decide_rule
            rule_one.append(f"if kind == {k}:\n    return _one_{k}(kind - {k}, turn)")
        elif f.deterministic:  # a table's look-up: a few lines, compiled in place
            bound[f"_one_{k}"] = _inline(f.functions[2])
            one.append(f"if kind == {k}:\n        return _one_{k}(turn, is_first, member, "
                       "st, g, rng)")
        if f.hears:
            bound[f"_respond_{k}"] = own.respond
            respond.append(f"if kind == {k}:\n        _respond_{k}(kind - {k}, side, event, "
                           "member, limit, active, st, g, rng)\n        return")
        if f.shape == "table" and f.functions[1] is not None:
            bound[f"_learn_{k}"] = own.learn
            learn.append(f"if kind == {k}:\n        _learn_{k}(kind - {k}, side, game, rows, "
                         "record, member, reward, time_left, loyal, st, g)\n        return")
    text = _HEADER.format(kinds=_names(forms))
    for module in templates:
        text += f"\n# --- from {module.__name__} " + "-" * max(0, 70 - len(module.__name__))
        text += "\n" + build.template_text(module)
    return text + _switch(forms, dispatch.INLINED, bound, dec=dec, one=one, rule_one=rule_one,
                          learn=learn, respond=respond, member_params=_MEMBER_PARAMS), bound


def _switch(forms: Sequence[Form], entry: str, bound: dict[str, Any], *, dec: list[str],
            rule_one: list[str], learn: list[str], respond: list[str], one: Sequence[str] = (),
            rules: str = "", member_params: str = "") -> str:
    """:data:`market.game.dispatch.SWITCH` filled with these cases for these kinds."""
    def kinds(test: Callable[[Form], bool]) -> str:
        return _any([k for k, f in enumerate(forms) if test(f)]) or "False"

    return dispatch.SWITCH.format(
        entry=entry, member_params=member_params, bindings=_bindings(bound), rules=rules,
        decide_cases=_cases(dec), one_cases=_cases(list(one)), rule_cases=_cases(rule_one),
        rule_kinds=kinds(lambda f: f.deterministic and f.shape == "rule"),
        learn_cases=_cases(learn), deterministic=kinds(lambda f: f.deterministic),
        respond_cases=_cases(respond), responds=kinds(lambda f: f.hears),
        tabled=kinds(lambda f: f.shape == "table"))


#: how a generated switch reads each row's member parameter (the stand-in's real form)
_MEMBER_PARAMS = "from strategies.rule_based import member_params  # noqa: E402, F401"


def _names(forms: Sequence[Form]) -> str:
    return ", ".join(f"{k} {f.identity}" for k, f in enumerate(forms))


def _bindings(bound: dict[str, Any]) -> str:
    return "\n".join(f"{name} = _BOUND[{name!r}]" for name in bound)


def _any(kinds: list[int]) -> str:
    return " or ".join(f"kind == {k}" for k in kinds)


def _cases(cases: list[str]) -> str:
    return "\n".join("    " + line for line in "\n".join(cases).splitlines())


def form_module(f: Form) -> types.ModuleType:
    """The generated module of one strategy form (its kind is 0): the rule inlined into the
    module's ``decide``, ``learn`` and ``decide_rule``, compiled once and shared by the
    strategy's own batch decision and every engine that holds it (a table's one-row
    ``decide_one``, a few lines, is compiled into each engine instead).

    Written once per digest and imported; numba compiles each of its
    functions on first call, or loads it from its cache.
    """
    return _module([f], ())


def engine_module(forms: Sequence[Form], templates: Sequence[types.ModuleType]
                  ) -> types.ModuleType:
    """The generated module of these loops (``templates``) for these forms, kinds numbered
    in this order; each kind runs its form module's compiled code, so adding a strategy
    compiles its rule and the loops again, never the other rules."""
    return _module(forms, templates)


def _module(forms: Sequence[Form], templates: Sequence[types.ModuleType]) -> types.ModuleType:
    key = (tuple(f.key for f in forms), tuple(m.__name__ for m in templates))
    found = build.memoised("compiled", key)
    if found is not None:
        return found
    text, bound = _switch_source(forms, templates) if templates else _source(forms)
    return build.module("compiled", text, bound, users=[g for f in forms for g in f.functions],
                        key=key, extras={"FORMS": tuple(forms),
                                         "KINDS": {f.key: k for k, f in enumerate(forms)}})


def kind_in(module: types.ModuleType, strategy: Strategy) -> int:
    """The kind number of ``strategy`` in a generated module (-1: not in it)."""
    f = form(type(strategy))
    return -1 if f is None else module.KINDS.get(f.key, -1)


#: numba's lines that say where it failed, not why (its stages, the source it quotes)
_NOT_A_REASON = ("Failed in ", "During:", "File ", "<source", "^", "def ", "Enable logging")


def numba_reason(exc: BaseException) -> str:
    """numba's first line that says why (an untyped name, types it cannot unify), its
    colour codes and stage names left out."""
    text = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in str(exc).splitlines()]
    reasons = [line for line in text if line and not line.startswith(_NOT_A_REASON)]
    return (reasons[0] if reasons else type(exc).__name__)[:200]


def compile_failure(name: str, exc: BaseException) -> CompileError:
    """The one line for a rule numba cannot compile: the strategy, numba's reason, and the
    way round where there is one (the lockstep path runs the rule as Python)."""
    return CompileError(f"strategy {name!r}: numba cannot compile its rule "
                        f"({numba_reason(exc)}); it still runs as Python on the lockstep path: "
                        "market --engine lockstep, batch --param engine=lockstep, "
                        "MarketModel(engine='lockstep')")


# --- a strategy's own batch decision, derived ----------------------------------------------------
class Compiled(Strategy):
    """A strategy whose decision is compiled code; its batch :meth:`act` and :meth:`learn`
    run that code (generated for its class alone) on its own rows.

    Rule-based strategies state a ``target`` (:mod:`strategies.rule_based`);
    table players set ``decide_rows`` (and ``learn_rows`` if they learn,
    ``decide_one`` if they draw nothing) to compiled functions of the shared
    signatures (:mod:`market.game.dispatch` says them).
    """

    decide_rows: ClassVar[Callable[..., None] | None] = None
    learn_rows: ClassVar[Callable[..., None] | None] = None
    decide_one: ClassVar[Callable[..., int] | None] = None

    _bound: tuple[Store, int] | None = None

    def prepare(self, protocol: Any) -> None:
        """Get ready to play ``protocol`` (a table player built for another game rebuilds its
        table); nothing for most."""

    def python_rows(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The decision run as Python, row by row, when numba cannot compile it (a rule's
        lockstep fallback); forms that cannot run so refuse."""
        raise NotImplementedError

    def bind(self, store: Store, g: int, view: KernelState) -> None:
        """Play from population ``g`` of ``store`` (the engine's), adopting its views."""
        self.adopt(view)
        self._bound = (store, g)

    def store(self) -> tuple[Store, int]:
        """The store this population plays from: the engine's, or one of its own."""
        if self._bound is None:
            store, views = stores([self.kernel_state()])
            self.bind(store, 0, views[0])
        assert self._bound is not None
        return self._bound

    def seat(self, members: np.ndarray, source: Strategy, rows: np.ndarray,
             size: int | None = None) -> bool:
        """As :meth:`Strategy.seat`; a population that grew builds its store anew on next
        use."""
        grew = super().seat(members, source, rows, size)
        if grew:
            self._bound = None
        return grew

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its store (views would come back as copies); rebuilt on use."""
        state = dict(self.__dict__)
        state.pop("_bound", None)
        return state

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        n = len(obs)
        f = _form_of(type(self))
        if f is None:
            raise NotImplementedError(f"{type(self).__name__} states no rule")
        try:
            module = batch_module(f)
        except CompileError:
            if f.shape != "rule":
                raise
            return self.python_rows(obs, rng)  # the lockstep path: the rule as Python
        self.prepare(obs.protocol)
        store, g = self.store()
        side = self.side
        last = np.zeros((2, n), dtype=np.int64)
        prev = np.zeros((2, n), dtype=np.int64)
        last[side], last[1 - side] = obs.own, obs.offer
        if obs.prev_offer is not None:
            prev[1 - side] = obs.prev_offer
        first = np.where(obs.first, side, 1 - side).astype(np.int64)
        seat = (_ints(obs.lo, n), _ints(obs.hi, n), _ints(obs.member, n),
                np.full(n, -1, np.int64) if obs.time_left is None else _ints(obs.time_left, n),
                np.zeros(n, np.int64),  # no partner choice outside the compiled market
                buffers.no_book())  # nor a book
        out = np.empty(n, dtype=np.int64)
        game = (int(obs.protocol.prices), int(obs.protocol.rounds))
        module.decide(0, side, int(obs.move), game, np.arange(n, dtype=np.int64),
                      (last, prev, first), seat, store.arrays, g, rng, out)
        return out

    def learn(self, record: BatchRecord, rows: np.ndarray, member: np.ndarray,
              reward: np.ndarray, time_left: np.ndarray | None = None) -> None:
        """Update from finished negotiations with the compiled ``learn_rows`` (if any)."""
        f = _form_of(type(self))
        if f is None or f.shape != "table" or f.functions[1] is None or rows.size == 0:
            return
        module = batch_module(f)
        store, g = self.store()
        n = rows.size
        pr = record.protocol
        rec = (np.ascontiguousarray(record.actions, dtype=np.int32),
               np.ascontiguousarray(record.first, dtype=np.int64),
               np.ascontiguousarray(record.n_moves, dtype=np.int64),
               np.ascontiguousarray(record.level, dtype=np.int64))
        tl = np.full(n, -1, np.int64) if time_left is None else _ints(time_left, n)
        module.learn(0, self.side, (int(pr.prices), int(pr.rounds)), _ints(rows, n), rec,
                     _ints(member, n), np.ascontiguousarray(reward, dtype=np.float64), tl,
                     np.zeros(n, np.int64), store.arrays, g)


def _ints(a: Any, n: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(a), (n,)), dtype=np.int64)


#: the forms numba could not compile in this process, and what was said of each
_refused: dict[tuple[Any, ...], CompileError] = {}


def batch_module(f: Form, announce: Callable[[], None] | None = None) -> types.ModuleType:
    """The generated module of one form alone (:func:`form_module`), built on first use
    (``announce``d, by default on stderr naming the rule: an engine says its own); a rule
    numba cannot compile is a :class:`CompileError` naming the strategy."""
    if f.key in _refused:  # said once: the lockstep path asks at every move
        raise _refused[f.key]
    module = form_module(f)
    try:
        build.build(module, _calls(module, f), announce or say_compiling(
            f"compiling {f.name}'s rule (kept for later runs)"))
    except (CompileError, StrategyFailed):
        raise
    except Exception as exc:
        reraise_signal(exc)
        if jit.numba is None:
            raise
        _refused[f.key] = compile_failure(f.name, exc)
        raise _refused[f.key] from None
    return module


def _calls(module: types.ModuleType, f: Form) -> dict[str, Callable[[], Any]]:
    """A form module's entry points, each called once on a tiny row (what builds them)."""
    n = 1
    i = np.zeros(n, dtype=np.int64)
    store, _ = stores([KernelState()])
    table = (np.zeros((2, n), np.int64), np.zeros((2, n), np.int64), i.copy())
    seat = (np.ones(n, np.int64), np.full(n, 2, np.int64), i.copy(), np.full(n, -1, np.int64),
            i.copy(), buffers.no_book())
    rng = np.random.default_rng(0)
    calls: dict[str, Callable[[], Any]] = {"decide": lambda: module.decide(
        -1, 0, 0, (2, 1), np.zeros(0, np.int64), table, seat, store.arrays, 0, rng,
        np.zeros(n, np.int64))}
    if f.shape == "rule" and f.deterministic:  # typed as the depth-first loop calls it

        def rule_one() -> None:
            try:
                module.decide_rule(-1, Turn(0, 0, 2, 1, 0, 0, 0, 1, 2, 0.0, 0, 0, 0, 0))
            except Exception as exc:  # its decide compiled with a generator: the rule draws
                reraise_signal(exc)
                raise CompileError(
                    f"strategy {f.name!r}: its rule draws from the generator, but its "
                    "classifier does not say so (Classifier(stochastic=True)); a deterministic "
                    "rule is played without one, depth first") from None

        calls["decide_rule"] = rule_one
    if f.hears:
        calls["respond"] = lambda: module.respond(-1, 0, (1, 1, 0), 0, 1, True, store.arrays,
                                                  0, rng)
    if f.shape == "table" and f.functions[1] is not None:
        rec = (np.zeros((n, 2), np.int32), i.copy(), i.copy(), i.copy())
        calls["learn"] = lambda: module.learn(-1, 0, (2, 1), np.zeros(0, np.int64), rec,
                                              i.copy(), np.zeros(n), np.full(n, -1, np.int64),
                                              i.copy(), store.arrays, 0)
    return calls


def say_compiling(text: str) -> Callable[[], None]:
    """What announces a first compile: ``text`` on stderr."""
    return lambda: print(text, file=sys.stderr, flush=True)


__all__ = ["Compiled", "Form", "engine_module", "form", "form_module", "has_form", "kind_in"]
