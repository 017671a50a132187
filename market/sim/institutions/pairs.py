"""Bilateral bargaining: every step, traders still holding their unit meet in pairs (at random,
or by partner choice: :mod:`market.sim.matching`) and bargain with alternating offers (the
game's protocol, its time pressure included)."""

from __future__ import annotations

from typing import Any

from market.sim.institutions import Institution


def partners(market: Any) -> tuple:
    """What the bilateral step takes last: the pairing rule and what the Buyers remember."""
    return market.partners.compiled


def smoke(n: int, prices: int) -> tuple:
    """Partners of a tiny market under partner choice (the build compiles both rules)."""
    from market.sim.partners import Partners

    return Partners.build("loyalty", 1.0, 0.1, 1, "loyal-first", n, n).compiled


INSTITUTION = Institution(
    name="pairs", words="bilateral pairs", order=0, bilateral=True,
    help="random pairs bargain with alternating offers",
    template="market.sim.kernel", entry="market_step", state=partners, smoke=smoke)
