"""How traders meet: every institution is one file of this package, registered by name.

| ``name`` | institution | book | its compiled step |
|---|---|---|---|
| ``pairs`` | random pairs bargain by alternating offers | none | ``kernel.market_step`` |
| ``cda`` | continuous double auction | standing quotes | ``auction.cda_step`` |
| ``call`` | call market: one clearing price a step | the last call's | ``auction.call_step`` |

(the steps in :mod:`market.sim.kernel` and :mod:`market.sim.auction`.)

An :class:`Institution` says what the rest of the market needs to know of
one: its name and words, whether traders bargain in pairs (where time
pressure, the rounds ``T`` and the lockstep engine apply) or quote to an
order book (:mod:`market.sim.auction`'s layout, its best quotes shown), and
its compiled step: a template module compiled with the strategies' decisions
(:mod:`strategies.compiled`) and the name of its entry. Every step takes ``k``
steps and returns their rows, with one calling convention
(:func:`market.sim.kernel.market_step`'s, :meth:`market.sim.engine.CompiledEngine.steps`):
``(k, rules, (r, K, with_clock), centre, sellers, buyers, pooled, kinds,
n_groups_s, st, draws, state)``, ``state`` the institution's own (:attr:`Institution.state`:
the order book, or bilateral bargaining's partners), and its own smoke arguments
for the build's first call (:attr:`Institution.smoke`).

The declarations (:mod:`market.sim.declared`: the parameter's choices and
words), the market's state, the engine, the view and the bench read
:data:`INSTITUTIONS`. A new one is a module here that sets ``INSTITUTION``
(found by name, no list to edit); the architecture page says how.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: a book's first look (:attr:`Institution.suggested`): Gode and Sunder's (1993)
#: zero-intelligence traders on 20 price levels, whose double auction is efficient from the
#: first period (the view's own first market, averaging traders and learners on 5 levels,
#: shows a book badly: few deals, all on a level or two)
BOOK_FIRST_LOOK: Mapping[str, Any] = {"prices": 20, "seller_mix": {"zi-c": 1.0},
                                      "buyer_mix": {"zi-c": 1.0}}
BOOK_WHY = ("Gode and Sunder's zero-intelligence traders on 20 price levels: a book is "
            "efficient with them from the first period, whatever the traders' wits")


@dataclass(frozen=True)
class Institution:
    """One way traders meet (module docstring)."""

    #: the ``institution`` parameter's value
    name: str
    #: the institution in words, as summaries and the view name it
    words: str
    #: its part of the parameter's help, after its name
    help: str
    #: the module holding its compiled step, a template (:mod:`market.sim.engine` compiles it)
    template: str
    #: its compiled step's name in :attr:`template`
    entry: str
    #: where it stands when institutions are listed
    order: int
    #: traders bargain in pairs by alternating offers (else: they quote to a book)
    bilateral: bool = False
    #: what the view's book chart calls its book
    chart: str = ""
    #: ``quotes(book, prices)``: the best bid and ask levels it shows (0: none)
    quotes: Callable[[tuple, int], tuple[int, int]] | None = None
    #: ``state(market)``: what its compiled step takes last (a book: the market's book)
    state: Callable[[Any], Any] = field(default=lambda market: market.book)
    #: ``smoke(n, prices)``: that argument for a market of ``n`` traders a side and
    #: ``prices`` levels (the build's first call; a book: an empty one)
    smoke: Callable[[int, int], Any] = field(default=lambda n, prices: _new_book(n, prices))
    #: the parameters (by name) a first look at it shows it best with, and why: the view
    #: starts it so when it is chosen (the command line's defaults stay as declared)
    suggested: Mapping[str, Any] = field(default_factory=dict)
    suggested_why: str = ""

    @property
    def book(self) -> bool:
        """Whether it holds an order book (every institution but bilateral bargaining)."""
        return not self.bilateral


def _new_book(n: int, prices: int) -> tuple:
    from market.sim import auction  # numba's, when a step is first compiled: not at start-up

    return auction.new_book(n, prices)


def _found() -> dict[str, Institution]:
    """Every module of this package that sets ``INSTITUTION``, by its name, in order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module: Any = importlib.import_module(f"{__name__}.{info.name}")
        institution = getattr(module, "INSTITUTION", None)
        if isinstance(institution, Institution):
            found.append(institution)
    return {i.name: i for i in sorted(found, key=lambda i: (i.order, i.name))}


#: every institution, by name, in order
INSTITUTIONS: dict[str, Institution] = _found()


def get(name: str) -> Institution:
    """The institution ``name`` (a ``KeyError`` names the choices: the parameter's check
    refuses unknown names before anything asks)."""
    try:
        return INSTITUTIONS[name]
    except KeyError:
        raise KeyError(f"no institution {name!r} (choose from: "
                       f"{', '.join(INSTITUTIONS)})") from None


def choices_in_words() -> str:
    """Each institution's name with its help: ``pairs (...), cda (...) or call (...)``."""
    said = [f"{i.name} ({i.help})" for i in INSTITUTIONS.values()]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}"


def templates() -> tuple[str, ...]:
    """The modules holding the institutions' compiled steps, each once, in order."""
    return tuple(dict.fromkeys(i.template for i in INSTITUTIONS.values()))


__all__ = ["INSTITUTIONS", "Institution", "choices_in_words", "get", "templates"]
