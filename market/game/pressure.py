"""The game's time pressure, declared once: discounts, fixed costs and breakdown risk.

Three standard ways to make waiting costly in alternating-offers bargaining
(:mod:`market.game.rules` states the rules each adds): each side's discount
factor per offer (Rubinstein 1982), each side's fixed cost per offer
(after Rubinstein 1982's second case, paid only when a deal is made) and the
risk that the talks break down after a counter-offer (Binmore, Rubinstein and
Wolinsky 1986). Each is a
:class:`~market.parameters.Param` here, and only here: the game's
:class:`~market.game.rules.Protocol`, the trainer's config and the market
carry them as fields (:func:`market.parameters.field_of`), and every command
spells them with the flags derived from these declarations. A light module
(no numba), so that a command builds its flags without loading the
compiler.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

from market.parameters import Control, Param

#: the finest time pressure a game takes: 1,000 times the exact evaluator's tie tolerance
#: (:data:`market.game.numeric.TIE_TOL`), so that what a unit of pressure changes is never a
#: tie to it (at 1e-13 per offer the evaluator picked deals that are not subgame perfect)
RESOLUTION = 1e-9

SELLER_DISCOUNT = Param("seller_discount", "float", 1.0,
                        "the Seller's discount factor per offer", lo=0, hi=1, extension=True,
                        resolution=RESOLUTION)
BUYER_DISCOUNT = Param("buyer_discount", "float", 1.0,
                       "the Buyer's discount factor per offer", lo=0, hi=1, extension=True,
                       resolution=RESOLUTION)
BREAKDOWN = Param(
    "breakdown", "float", 0.0, "probability, in [0, 1), that the talks break down with no "
    "deal after each counter-offer (default 0: never)", lo=0, hi=1, closed=True, below=True,
    flag="--breakdown", metavar="Q", extension=True,
    control=Control("Breakdown risk per counter-offer", 0.0, 0.5), resolution=RESOLUTION)
SELLER_COST = Param(
    "seller_cost", "float", 0.0, "the Seller's fixed cost per offer made before a deal, in "
    "[0, 1) of the surplus (default 0; at 1 no deal after the opening offer would be worth "
    "anything)", lo=0, hi=1, closed=True, below=True, flag="--seller-cost", metavar="C",
    extension=True, control=Control("Seller's cost per offer", 0.0, 0.2), resolution=RESOLUTION)
BUYER_COST = Param(
    "buyer_cost", "float", 0.0, "the Buyer's fixed cost per offer made before a deal, in "
    "[0, 1) (default 0)", lo=0, hi=1, closed=True, below=True, flag="--buyer-cost",
    metavar="C", extension=True, control=Control("Buyer's cost per offer", 0.0, 0.2),
    resolution=RESOLUTION)

#: every kind of time pressure, in the order a protocol holds them
PRESSURE = (SELLER_DISCOUNT, BUYER_DISCOUNT, BREAKDOWN, SELLER_COST, BUYER_COST)
#: the discounts, which the market and the commands also take as one ``--discount``
DISCOUNTS = (SELLER_DISCOUNT, BUYER_DISCOUNT)
#: every other kind, declared here with its flag and its control in the view: the market,
#: the view and the batch grid take each as it is
OTHERS = tuple(d for d in PRESSURE if d not in DISCOUNTS)
#: each side's cost per offer
COSTS = (SELLER_COST, BUYER_COST)


class Kind(NamedTuple):
    """One kind of time pressure: its fields, the name a table file's array and a JSON
    record give it, its tag in a file name, how a game's header says it (a format with a
    place per field) and whether it changes only what a deal is worth (not which deals are
    reached, as a breakdown does). A record of the kinds keeps a game without any pressure
    exactly as it always was (each kind only where it is in force)."""

    name: str
    tag: str
    params: tuple[Param, ...]
    text: str
    worth_only: bool


#: the kinds, in the order a record lists them
KINDS = (Kind("discount", "d", DISCOUNTS, "discount per offer: Seller {}, Buyer {}", True),
         Kind(BREAKDOWN.name, "q", (BREAKDOWN,), "breakdown risk {} per counter-offer", False),
         Kind("cost", "c", COSTS, "cost per offer: Seller {}, Buyer {}", True))
assert [d for kind in KINDS for d in kind.params] == list(PRESSURE)  # each field in one kind


def in_force(source: object) -> dict[str, tuple[float, ...]]:
    """The kinds of pressure ``source`` (a protocol, a trainer's config) puts on the game, by
    name, each with its fields' values: a kind is in force when any of its fields is off
    its default."""
    out: dict[str, tuple[float, ...]] = {}
    for kind in KINDS:
        values = tuple(float(getattr(source, d.name)) for d in kind.params)
        if any(v != d.default for v, d in zip(values, kind.params, strict=True)):
            out[kind.name] = values
    return out


class Pressure(namedtuple("Pressure", [d.name for d in PRESSURE],
                          defaults=[float(d.default) for d in PRESSURE])):
    """The game's time pressure as one record, the one argument every compiled path takes
    (:mod:`market.game.moves`): a float field per declaration of :data:`PRESSURE`, in its
    order, made from it (a new kind is its declaration above and its rule in
    :mod:`market.game.moves`)."""

    __slots__ = ()

    @classmethod
    def of(cls, source: object) -> Pressure:
        """The record of anything holding the declared fields (a protocol, a trainer's
        config, the market's parameters), as floats (one compiled signature)."""
        return cls(*(float(getattr(source, d.name)) for d in PRESSURE))


assert Pressure._fields == tuple(d.name for d in PRESSURE)  # one order, the declarations'


__all__ = ["RESOLUTION", "BREAKDOWN", "BUYER_COST", "BUYER_DISCOUNT", "COSTS", "DISCOUNTS", "KINDS",
           "OTHERS", "PRESSURE", "SELLER_COST", "SELLER_DISCOUNT", "Kind", "Pressure",
           "in_force"]
