"""Size limits: how large a game, a population or a run one command may ask for.

One home for the caps so that every command that takes a size refuses the
same values with the same words, before it allocates anything.
"""

from __future__ import annotations

from market.errors import UsageError

#: Q-table cells (float64, 8 bytes each: 800 MB) one command may allocate at once
TABLE_CELLS_MAX = 100_000_000
#: traders on one side of a market, and teams per side
TRADERS_MAX = 2_000_000
#: steps of one market run, and steps per trading period
STEPS_MAX = 1_000_000
#: price levels P of a market's protocol
PRICES_MAX = 1000
#: rounds T of a market's protocol
ROUNDS_MAX = 1000


def check_table_cells(cells: float, what: str, advice: str) -> None:
    """Refuse a game or population whose Q-tables would not fit, before allocating them."""
    if cells > TABLE_CELLS_MAX:
        raise UsageError(
            f"{what} would need {cells:,.0f} Q-table cells ({cells * 8 / 2**30:.1f} GiB; "
            f"at most {TABLE_CELLS_MAX:,}): {advice}"
        )
