"""Bilateral bargaining: every step, traders still holding their unit meet in random pairs and
bargain with alternating offers (the game's protocol, its time pressure included)."""

from __future__ import annotations

from market.sim.institutions import Institution

INSTITUTION = Institution(
    name="pairs", words="bilateral pairs", order=0, bilateral=True,
    help="random pairs bargain with alternating offers",
    template="market.sim.kernel", entry="market_step")
