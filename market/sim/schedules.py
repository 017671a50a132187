"""Value schedules a researcher names: Buyers' values and Sellers' costs given, not drawn.

Laboratory markets are run on stated schedules, so that a result can be set
against the competitive equilibrium the schedule implies and against other
laboratories'. The ``schedule`` parameter is ``drawn`` (the default: values
and costs drawn from their ranges), one of :data:`NAMED`, or a schedule of
one's own written ``V1,V2,...;C1,C2,...`` (the Buyers' values, then the
Sellers' costs, in money). A schedule of ``k`` values is held by a multiple
of ``k`` Buyers: trader ``i`` holds value ``i mod k`` (and the same for the
Sellers), so one schedule makes a market of any size that is a multiple of
it, with the same competitive price.

Named schedules, with their competitive price ``p*`` and quantity ``q*`` (per
copy of the schedule):

| name | Buyers' values | Sellers' costs | ``p*`` | ``q*`` |
|---|---|---|---|---|
| ``symmetric`` | 3.25, 3.00, ..., 0.75 (11) | 0.75, 1.00, ..., 3.25 (11) | 2.00 | 6 |
| ``flat-supply`` | 3.25, 3.00, ..., 0.75 (11) | 2.00 (11) | 2.00 | 6 |
| ``flat-demand`` | 2.00 (11) | 0.75, 1.00, ..., 3.25 (11) | 2.00 | 6 |
| ``excess-demand`` | 3.25 (11) | 0.75 (6) | 3.25 | 6 |

``symmetric`` has the shape of Smith's (1962) first design (linear supply
and demand crossing at the middle); with the flat ones, after Cliff and
Bruten (1997), all of the surplus at the competitive price goes to one side,
where zero-intelligence prices are known to miss the equilibrium; with
``excess-demand`` the competitive price is the Buyers' value itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from market.limits import MONEY_MAX

#: values and costs drawn from their ranges (no schedule)
DRAWN = "drawn"
#: the most values (or costs) one schedule may list
LENGTH_MAX = 10_000

_STEPS = tuple(round(3.25 - 0.25 * i, 2) for i in range(11))
#: the named schedules: (Buyers' values, Sellers' costs)
NAMED: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "symmetric": (_STEPS, _STEPS[::-1]),
    "flat-supply": (_STEPS, (2.0,) * 11),
    "flat-demand": ((2.0,) * 11, _STEPS[::-1]),
    "excess-demand": ((3.25,) * 11, (0.75,) * 6),
}
#: what the parameter's messages say is allowed
ALLOWED = (f"{DRAWN}, one of {', '.join(NAMED)}, or V1,V2,...;C1,C2,... (values, then costs, "
           f"at most {LENGTH_MAX:,} each, >= 0)")


@dataclass(frozen=True)
class Schedule:
    """Buyers' ``values`` and Sellers' ``costs``, one per trader of one copy of it."""

    values: tuple[float, ...]
    costs: tuple[float, ...]

    def of(self, side_is_buyer: bool, n: int) -> np.ndarray:
        """The reservation prices of ``n`` traders of one side: the schedule repeated."""
        own = self.values if side_is_buyer else self.costs
        return np.resize(np.asarray(own, dtype=float), n)

    @property
    def bounds(self) -> tuple[float, float]:
        """The lowest and highest price in it (what the price grid spans)."""
        every = (*self.values, *self.costs)
        return min(every), max(every)


def parse(text: str, name: str = "schedule") -> Schedule | None:
    """The schedule ``text`` names or writes out (None: ``drawn``); ``ValueError`` naming
    ``name`` and what is allowed."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be {ALLOWED} (got {text!r})")
    if text == DRAWN:
        return None
    if text in NAMED:
        return Schedule(*NAMED[text])
    values, semi, costs = text.partition(";")
    if not semi:
        raise ValueError(f"{name} must be {ALLOWED} (got {text!r})")
    out = []
    for what, part in (("values", values), ("costs", costs)):
        members = part.split(",")
        if len(members) > 1 and not all(x.strip() for x in members):
            raise ValueError(f"{name}: an empty member among its {what} in {text!r} (two "
                             f"commas, or one at an end): separate numbers by single commas")
        try:
            numbers = tuple(float(x) for x in members if x.strip())
        except ValueError:
            raise ValueError(f"{name}: its {what} must be numbers separated by ',' "
                             f"(got {part!r})") from None
        if not numbers:
            raise ValueError(f"{name}: list at least one of its {what} (got {text!r})")
        if len(numbers) > LENGTH_MAX:
            raise ValueError(f"{name}: at most {LENGTH_MAX:,} {what} (got {len(numbers):,})")
        bad = [x for x in numbers if not (math.isfinite(x) and 0 <= x <= MONEY_MAX)]
        if bad:
            raise ValueError(f"{name}: its {what} must be finite numbers in [0, "
                             f"{MONEY_MAX:g}] (got {bad[0]:g})")
        out.append(numbers)
    schedule = Schedule(*out)
    lo, hi = schedule.bounds
    if lo == hi:
        raise ValueError(f"{name}: its values and costs are all {lo:g}; a price grid needs "
                         f"two different prices")
    return schedule


def check(schedule: Schedule | None, text: str, n_buyers: int, n_sellers: int,
          say: dict[str, str], prices: int | None = None) -> None:
    """The ``schedule`` (:func:`parse` of ``text``) fits the market: each side's traders a
    multiple of its length, and (with ``prices``) a price grid of that many levels over its
    bounds holds a price of its competitive band (else no grid price lets the competitive
    trades happen, and efficiency would be measured against a surplus the grid cannot
    reach); ``ValueError`` naming the parameters (``say``: what the caller calls them)."""
    if schedule is None:
        return
    for n, own, flag, what in ((n_buyers, schedule.values, say["n_buyers"], "values"),
                               (n_sellers, schedule.costs, say["n_sellers"], "costs")):
        if n % len(own):
            raise ValueError(f"{say['schedule']} {text!r} lists {len(own)} {what}: {flag} "
                             f"must be a multiple of {len(own)} (got {n})")
    if prices is not None and not holds_band(schedule, prices):
        fit = next((p for p in range(prices + 1, 10_001) if holds_band(schedule, p)), None)
        lo, hi = band(schedule)
        where = f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"
        hint = f"; {say['prices']} {fit} is the fewest that does" if fit else ""
        raise ValueError(f"{say['prices']} {prices}: no price of the grid lies in the "
                         f"competitive band ({where}) of {say['schedule']} {text!r}, so the "
                         f"competitive trades cannot happen{hint}")


def band(schedule: Schedule) -> tuple[float, float]:
    """The competitive price band of one copy of the schedule (every copy has the same)."""
    from market.sim.yardsticks import competitive_equilibrium

    eq = competitive_equilibrium(np.asarray(schedule.values, float),
                                 np.asarray(schedule.costs, float))
    return float(eq.price_lo), float(eq.price_hi)


def holds_band(schedule: Schedule, prices: int) -> bool:
    """Whether a grid of ``prices`` levels over the schedule's bounds has a price in its
    competitive band (no band: nothing to hold)."""
    lo, hi = band(schedule)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return True
    low, high = schedule.bounds
    grid = low + (high - low) * np.arange(prices) / (prices - 1)
    tol = 1e-9 * max(1.0, abs(high))
    return bool(((grid >= lo - tol) & (grid <= hi + tol)).any())
