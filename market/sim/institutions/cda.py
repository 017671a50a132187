"""A continuous double auction: traders activated one at a time quote to a public book, and a
quote that crosses the best opposite one trades at that one's price
(:func:`market.sim.auction.cda_step`)."""

from __future__ import annotations

from market.game.rules import BUYER, SELLER
from market.sim.institutions import BOOK_FIRST_LOOK, BOOK_WHY, Institution


def standing(book: tuple, prices: int) -> tuple[int, int]:
    """The best standing bid and ask."""
    from market.sim import auction

    return int(auction.best(book, BUYER, prices)), int(auction.best(book, SELLER, prices))


INSTITUTION = Institution(
    name="cda", words="continuous double auction", order=1,
    help="a continuous double auction with a public book",
    template="market.sim.auction", entry="cda_step", chart="the double auction's book",
    quotes=standing,
    suggested=BOOK_FIRST_LOOK, suggested_why=BOOK_WHY)
