"""Who bargains with whom in bilateral bargaining: the pairing rules, registered by name.

| ``matching`` | who meets whom each step | what a trader keeps |
|---|---|---|
| ``random`` | traders still holding a unit, in random pairs | nothing |
| ``loyalty`` | each Buyer visits one Seller, chosen by her preferences | her ``J`` per Seller |

Under ``random`` the longer side's extra traders wait; under ``loyalty`` a Seller
bargains with her visitors one at a time while she holds her unit.

``loyalty`` is the partner choice of Weisbuch, Kirman and Herreiner (2000),
"Market organisation and trading relationships", *Economic Journal* 110:

- A Buyer visits Seller ``j`` with probability ``exp(beta J_j) / sum_k exp(beta J_k)``
  (``beta``: the choice intensity, the ``loyalty_beta`` parameter).
- As a period closes, each Buyer's preferences become ``J_j <- (1 - gamma) J_j + pi_j``
  (``gamma``: the memory decay, the ``loyalty_gamma`` parameter):
  ``pi_j`` is what her deal with ``j`` in that period earned her, as a share of the
  price range (the learners' reward), 0 for every Seller she did not deal with.
- A Buyer remembers at most ``memory`` Sellers (``loyalty_memory``); every other Seller
  has ``J = 0``, as every Seller has before a first deal, and is chosen with weight
  ``exp(0) = 1``.
  With ``memory`` at least the number of Sellers, this is the paper's rule exactly;
  below it, a new deal takes the place of the remembered Seller with the smallest
  ``J`` if it is larger. Memory is ``O(Buyers x memory)``, whatever the number of Sellers.
- Each step, a Seller serves her visitors in random order, or (``service``
  ``loyal-first``) those with the largest ``J`` for her first (Kirman and Vriend 2001),
  until she has sold her unit. Each visit is a whole negotiation by the market's
  protocol, with the traders' own strategies.
- A Buyer who was not served (her Seller sold out, or no deal) waits for the next
  step and chooses again, from the same preferences: they change only as a period
  closes, as in the paper.

This module is the registry, data only (the flags are built from it at no cost);
:mod:`market.sim.partners` holds the rules, compiled, and what the Buyers remember.

Rounds: the first visitor of every Seller bargains at once, then the second of every
Seller who has not sold, and so on (:func:`market.sim.partners.next_round`);
:func:`market.sim.kernel.market_step` runs a step as such rounds. ``random`` is one round
of :func:`market.sim.exchange.pair`.

Measured at each period's close (:func:`market.sim.partners.figures`): WKH's order parameter
``y = sum_j J_j^2 / (sum_j J_j)^2`` of each Buyer (1: loyal to one Seller; ``1/n``:
searching among ``n`` alike; ``1/n_sellers`` for a Buyer with no preference yet), the
share of loyal Buyers (``y >= 0.9``: one Seller holds almost all of her preference), the
Sellers a Buyer effectively divides her visits among (``1/y``), the dispersion of the
prices the Sellers sold at, and what loyal and searching Buyers earned in the period.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the rules' codes in the compiled step
RANDOM, LOYALTY = 0, 1
#: a Seller's service order under ``loyalty``
SERVE_RANDOM, SERVE_LOYAL_FIRST = 0, 1


@dataclass(frozen=True)
class Rule:
    """One pairing rule: its ``matching`` value, its code in the compiled step, its help."""

    name: str
    code: int
    help: str


#: every pairing rule of bilateral bargaining, by name
MATCHINGS: dict[str, Rule] = {
    "random": Rule("random", RANDOM, "random pairs every step"),
    "loyalty": Rule("loyalty", LOYALTY,
                    "each Buyer visits a Seller chosen by what her deals earned "
                    "(Weisbuch-Kirman-Herreiner)"),
}
#: the Sellers' service orders, by the ``service`` parameter's value
SERVICES = {"random": SERVE_RANDOM, "loyal-first": SERVE_LOYAL_FIRST}


def choices_in_words() -> str:
    """``random (...) or loyalty (...)``: the ``matching`` parameter's help."""
    return " or ".join(f"{r.name} ({r.help})" for r in MATCHINGS.values())

__all__ = ["LOYALTY", "MATCHINGS", "RANDOM", "SERVICES", "Rule", "choices_in_words"]
