"""The survival section: every headline at three master seeds, the tournament's winner as a
count, and the switching volume beside the effective number of families."""

from __future__ import annotations

import pytest

from market.report import survival
from market.report.section import MASTERS, Context


@pytest.fixture(scope="module")
def section():
    return survival.run(Context(quick=True))


def test_every_headline_is_checked_at_three_master_seeds(section):
    seeds = section.tables["survival_seeds.csv"]
    assert sorted(seeds["master_seed"].unique()) == list(range(MASTERS))
    assert set(seeds["protocol"]) == {*survival.PROTOCOLS, survival.NEUTRAL}
    rest = section.tables["survival_tournament.csv"]
    assert rest.shape[1] == MASTERS  # the tournament's rest point at each master seed
    winners = section.numbers["tournament_winners"]
    assert winners == [str(rest[c].idxmax()) for c in rest.columns]
    assert "tournament seeds" in section.answer and f"of {MASTERS}" in section.answer


def test_switching_volume_is_reported_beside_diversity(section):
    summary = section.tables["survival.csv"]
    assert {"switching", "switching_lo", "switching_hi"} <= set(summary.columns)
    assert (summary["switching"] >= 0).all() and (summary["switching"] <= 1).all()
    assert "Switching volume" in section.answer
    # imitation switches only with a probability proportional to the gap: less than Moran
    by = summary[summary["mutation"] == 0].set_index("protocol")["switching"]
    assert by["imitate"] < by["moran"]
