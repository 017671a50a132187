"""No compiled step reads memory it has freed.

glibc gives an allocation of at least ``MALLOC_MMAP_THRESHOLD_`` bytes a
mapping of its own and returns it to the system when it is freed, so under a
threshold of 4 KiB a read of a freed array is a SIGSEGV at once, not a
silent read of stale data. A market's learners read arrays the engine made
for the call (a population's rows, rewards, clock) that their compiled
``learn`` had taken as lent (``jit.borrowed``): freed before it read them, a
20,000 + 20,000 clocked market died with SIGSEGV in some runs, and smaller
markets read freed memory unnoticed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = """
import sys
from market.sim.model import MarketModel

MarketModel(**eval(sys.argv[1]), seed=0).run(12)
print("ran")
"""

#: markets whose every compiled path with learners and listeners runs a few steps
MARKETS = {
    "learners in pairs": dict(n_buyers=1500, n_sellers=1500, buyer_mix={"qlearning": 1.0},
                              seller_mix={"qlearning": 1.0}),
    "clocked learners who see loyalty": dict(
        n_buyers=1500, n_sellers=1500, buyer_mix={"qlearning": 1.0},
        seller_mix={"qlearning": 1.0}, clock=True, matching="loyalty", loyal_state=True),
    "learners and listeners in a book": dict(
        n_buyers=1500, n_sellers=1500, buyer_mix={"qlearning": 0.5, "zip": 0.5},
        seller_mix={"qlearning": 0.5, "kaplan": 0.5}, institution="cda", prices=20),
}


@pytest.mark.parametrize("market", MARKETS)
def test_a_market_with_learners_never_reads_an_array_it_freed(market):
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", SCRIPT,
                           repr(MARKETS[market])], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "4096"})
    frames = done.stderr.split("Extension modules")[0]
    assert done.returncode == 0 and done.stdout.split() == ["ran"], (done.returncode,
                                                                    frames[-3000:])
