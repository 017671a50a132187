"""Learned play beside the game's subgame-perfect equilibrium: the measures two sections share.

The time-costs and the time-pressure sections train self-play learners at
many points and hold each seed's greedy play to the same rule: NashConv in
the game at most :data:`NASH_TOL` and the first mover's share within one price
level of the grid's backward-induction SPE (``evaluation.spe``), on at least
:data:`TARGET` of the seeds. :func:`measure` computes every count and share
that rule and the sections' tables need, once, here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from market.game import evaluation, outcome_sets, policies
from market.game.rules import SELLER, Protocol
from market.game.training import PRESETS
from market.report.section import Context
from market.report.stats import share

#: the target: NashConv at most this and the share within one level, on >= TARGET of seeds
NASH_TOL = 0.01
TARGET = 0.9
#: training budget per point: cycles of 1,000 episodes per round of the game (a game of T
#: rounds has about T times the states), never below the ``perfect`` preset's own
CYCLES_PER_ROUND = 1000


def budget(ctx: Context, T: int) -> int:
    """Training cycles at horizon ``T`` (see :data:`CYCLES_PER_ROUND`)."""
    return ctx.pick(max(PRESETS["perfect"].cycles, CYCLES_PER_ROUND * T), 150)


def budget_text(ctx: Context) -> str:
    """The budget in words, for a section's experiment."""
    return ("150,000 episodes per seed" if ctx.quick else
            f"{CYCLES_PER_ROUND * 1000:,} episodes per seed per round, at least "
            f"{PRESETS['perfect'].total_episodes:,}")


def verdicts(table: pd.DataFrame, counts: tuple[str, ...]) -> pd.DataFrame:
    """Wilson intervals (``COL_lo``, ``COL_hi``) of each count's share of the seeds, and
    whether the point meets the target (``target_met``), added to ``table``."""
    for col in counts:
        est = [share(int(h), int(n)) for h, n in zip(table[col], table["seeds"], strict=True)]
        table[f"{col}_lo"] = [e.lo for e in est]
        table[f"{col}_hi"] = [e.hi for e in est]
    table["target_met"] = table["both"] >= TARGET * table["seeds"]
    return table


def measure(seller: np.ndarray, buyer: np.ndarray, protocol: Protocol) -> dict[str, Any]:
    """Every seed's greedy play (its tables ``seller``, ``buyer``: ``(n, ...)``) beside the
    grid's SPE, the Seller moving first: the SPE's level, share and set of pure outcome
    levels; the learned shares' 10th, 50th and 90th percentiles; how many seeds play a
    lottery (a greedy tie on the way), deal after the first offer, reach NashConv <=
    :data:`NASH_TOL`, end within one level of the SPE (and of its set), and both."""
    P = protocol.prices
    s_pol = policies.greedy_policy(seller, protocol)
    b_pol = policies.greedy_policy(buyer, protocol)
    nc = np.asarray(evaluation.nash_conv(s_pol, b_pol, protocol, policies=True))
    level, move = evaluation.deals(s_pol, b_pol, protocol, SELLER, policies=True)
    spe_level = int(evaluation.deals(*evaluation.spe(protocol), protocol, SELLER,
                                     policies=True)[0][0])
    spe_set = sorted({lv for lv, _, _ in outcome_sets.spe_outcomes(protocol)["seller"]})
    sure = level >= 0
    near = sure & (np.abs(level - spe_level) <= 1)
    near_set = sure & (np.abs(level[:, None] - np.asarray(spe_set)[None]).min(axis=1) <= 1)
    nash = nc <= NASH_TOL
    learned = level[sure] / P
    q = np.percentile(learned, [10, 50, 90]) if learned.size else (np.nan,) * 3
    return {
        "spe_level": spe_level, "spe_share": spe_level / P,
        "spe_set_levels": " ".join(str(x) for x in spe_set),
        "learned_share_p10": q[0], "learned_share_median": q[1], "learned_share_p90": q[2],
        "lotteries": int((~sure).sum()), "deal_after_first_offer": int((sure & (move > 1)).sum()),
        "nashconv_median": float(np.median(nc)), "nash": int(nash.sum()),
        "near_spe": int(near.sum()), "near_spe_set": int(near_set.sum()),
        "both": int((nash & near).sum()), "both_set": int((nash & near_set).sum()),
    }


#: the measures that come before theory's columns in a section's table, and after
HEAD = ("spe_level", "spe_share", "spe_set_levels")
TAIL = ("learned_share_p10", "learned_share_median", "learned_share_p90", "lotteries",
        "deal_after_first_offer", "nashconv_median", "nash", "near_spe", "near_spe_set",
        "both", "both_set")

__all__ = ["CYCLES_PER_ROUND", "HEAD", "NASH_TOL", "TAIL", "TARGET", "budget", "budget_text",
           "measure", "verdicts"]
