"""A call market: every trader quotes at once each step, and the book clears at one price
(:func:`market.sim.auction.call_step`)."""

from __future__ import annotations

from market.game.rules import BUYER, SELLER
from market.sim.institutions import BOOK_FIRST_LOOK, BOOK_WHY, Institution


def unmatched(book: tuple, prices: int) -> tuple[int, int]:
    """The best bid and ask the last call left unmatched."""
    left = book[6]
    return int(left[BUYER]), int(left[SELLER])


INSTITUTION = Institution(
    name="call", words="call market", order=2,
    help="a call market clearing at one price each step",
    template="market.sim.auction", entry="call_step", chart="the call market",
    quotes=unmatched,
    suggested=BOOK_FIRST_LOOK, suggested_why=BOOK_WHY)
