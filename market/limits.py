"""Size limits: how large a game, a population or a run one command may ask for.

One home for the caps so that every command that takes a size refuses the
same values with the same words, before it allocates anything. Fixed caps
bound each number on its own; :func:`check_memory` bounds what they add up
to against this machine's memory, since a run of sizes each within its cap
can still need more than the machine has.
"""

from __future__ import annotations

import os
import sys

from market.errors import UsageError

#: Q-table cells (float64, 8 bytes each: 800 MB) one command may allocate at once
TABLE_CELLS_MAX = 100_000_000
#: traders on one side of a market, and teams per side (ten million averaging traders ran 10
#: steps in 8.6 GiB on a 24 GiB machine; the memory estimate bounds what fits)
TRADERS_MAX = 5_000_000
#: steps of one market run, and steps per trading period
STEPS_MAX = 1_000_000
#: price levels P of a market's protocol
PRICES_MAX = 1000
#: rounds T of a market's protocol
ROUNDS_MAX = 1000
#: largest |price| of a reservation-price range: sums of prices over every trade of a run
#: (up to TRADERS_MAX x STEPS_MAX of them) stay finite and keep cents exact
MONEY_MAX = 1e12
#: points of one batch grid (each is checked before any run starts)
GRID_POINTS_MAX = 100_000
#: runs of one batch (grid points x iterations); each is a row of the table and a part file
BATCH_RUNS_MAX = 1_000_000
#: share of the memory this process may use (:func:`machine_memory`) one run may be estimated
#: to need
MEMORY_SHARE = 0.8
#: longest run, in seconds, one command accepts (estimated from measured rates)
SECONDS_MAX = 3600
#: runs estimated longer than this say their estimate before they start
SECONDS_ANNOUNCED = 10


def check_table_cells(cells: float, what: str, advice: str) -> None:
    """Refuse a game or population whose Q-tables would not fit, before allocating them."""
    if cells > TABLE_CELLS_MAX:
        raise UsageError(
            f"{what} would need {cells:,.0f} Q-table cells ({cells * 8 / 2**30:.1f} GiB; "
            f"at most {TABLE_CELLS_MAX:,}): {advice}"
        )


#: where the system lists this process's control groups, and where their files are
PROC_CGROUP = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's physical memory, or less where a
    control group (a container's limit) says so (None where the system does not say)."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        pages = size = 0
    physical = pages * size if pages > 0 and size > 0 else None
    limits = [x for x in (physical, cgroup_memory()) if x is not None]
    return min(limits) if limits else None


def cgroup_memory() -> int | None:
    """The smallest memory limit of this process's control groups and the groups above them
    (cgroup v2's ``memory.max``, v1's ``memory.limit_in_bytes``); None if there is none."""
    try:
        with open(PROC_CGROUP) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    found = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # v2: one hierarchy
            base, name = CGROUP_ROOT, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = os.path.join(CGROUP_ROOT, "memory"), "memory.limit_in_bytes"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):  # the group and every group above it
            try:
                with open(os.path.join(base, *parts[:depth], name)) as f:
                    text = f.read().strip()
            except OSError:
                continue
            if text.isdigit() and int(text) < 2**60:  # "max", or v1's huge "no limit"
                found.append(int(text))
    return min(found) if found else None


def check_memory(estimate: float, what: str, advice: str) -> None:
    """Refuse work estimated to need more than :data:`MEMORY_SHARE` of the memory this
    process may use (the machine's, or its control group's limit if lower).

    The message names the estimate and the limit, so a user can tell how far
    over it is and what to lower.
    """
    total = machine_memory()
    if total is None:
        return
    limit = MEMORY_SHARE * total
    if estimate > limit:
        whose = ("its control group's limit of" if total == cgroup_memory()
                 else "this machine's")
        raise UsageError(
            f"{what} would need about {_gib(estimate)} of memory (at most {_gib(limit)}, "
            f"{MEMORY_SHARE:.0%} of {whose} {_gib(total)}): {advice}"
        )


def check_time(seconds: float, what: str, advice: str, quiet: bool = False) -> None:
    """Refuse work estimated over :data:`SECONDS_MAX`, with the estimate; say the estimate
    first (on stderr) when it is over :data:`SECONDS_ANNOUNCED`, so no long wait is silent.

    ``seconds`` comes from the caller's measured rate on a 2-core machine (each
    caller documents its own); ``quiet`` (``--json``) keeps stderr for errors.
    """

    if seconds > SECONDS_MAX:
        raise UsageError(f"{what} would take about {_duration(seconds)} on this kind of machine "
                         f"(at most {SECONDS_MAX // 60} minutes): {advice}")
    if seconds > SECONDS_ANNOUNCED and not quiet:
        print(f"{what}: about {_duration(seconds)}", file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} hours"
    return f"{seconds / 60:.0f} minutes" if seconds > 90 else f"{seconds:.0f} s"


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"
