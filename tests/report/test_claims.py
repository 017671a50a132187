"""No sentence of the report says more than its numbers: verdicts match p-values (Holm's
where the test is confirmatory), intervals hold their estimates and stay inside a measure's
bounds, and the old templated phrases that were printed whatever the estimate are gone.

Read from the session's ``report --quick``, whose small samples make every kind of
verdict likely, so the rules are exercised on results that are mostly not significant.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from market.report import stats

#: one worker reads the quick report (its fixture builds it once): no other waits for it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("quick_report")]

NUMBER = r"[+-]?[\d,]*\.?\d+"
#: ``+0.12 (+0.05 to +0.19; p = 0.003, Holm-adjusted p = 0.006; a finding)`` as the text
#: writes a judged difference (stats.Difference.judged)
JUDGED = re.compile(
    rf"(?P<v>{NUMBER}) \((?P<lo>{NUMBER}) to (?P<hi>{NUMBER}); p (?P<op>[=<]) (?P<p>[\d.]+)"
    rf"(?:, Holm-adjusted p (?P<hop>[=<]) (?P<hp>[\d.]+))?; (?P<verdict>a finding|borderline, "
    r"not stated as a finding|not significant)")
#: measure columns of the CSV tables and the bounds their intervals must respect
BOUNDED = {"efficiency": (-math.inf, 1.0), "seller_share": (0.0, 1.0),
           "deal_rate": (0.0, 1.0), "first_mover_reward": (0.0, 1.0),
           "untouched_cells": (0.0, 1.0), "share_at_zero": (0.0, 1.0), "alpha": (0.0, math.inf),
           "nash_conv": (0.0, math.inf)}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def test_every_judged_sentence_matches_its_p_value(quick_report):
    out, _ = quick_report
    text = (out / "report.md").read_text()
    found = list(JUDGED.finditer(text))
    assert len(found) >= 10  # every market section judges its comparisons
    for m in found:
        p = number(m["hp"] if m["hp"] else m["p"])
        below = (m["hop"] if m["hp"] else m["op"]) == "<"
        verdict = m["verdict"]
        # p is printed to 2 or 3 decimals: allow for its rounding
        if verdict == "a finding":
            assert below or p < stats.FINDING, m[0]
        elif verdict == "not significant":
            assert not below and p >= 0.045, m[0]
        else:
            assert not below and 0.0095 <= p <= 0.05, m[0]
        if m["hp"]:
            assert number(m["hp"]) >= number(m["p"]) or m["hop"] == "<", m[0]
        assert number(m["lo"]) <= number(m["v"]) <= number(m["hi"]), m[0]


def test_the_tests_table_says_what_its_p_values_say(quick_report):
    out, _ = quick_report
    tests = pd.read_csv(out / "tests.csv")
    assert set(tests["kind"]) == {"confirmatory", "exploratory"}
    for r in tests.itertuples():
        p = r.p_holm if r.kind == "confirmatory" else r.p
        assert r.verdict == stats.verdict(p), r
        if r.kind == "confirmatory":
            assert r.p_holm >= r.p - 1e-12, r
        else:
            assert math.isnan(r.p_holm), r
        assert r.lo - 1e-9 <= r.estimate <= r.hi + 1e-9, r


def test_bounded_measures_have_intervals_inside_their_bounds(quick_report):
    out, _ = quick_report
    checked = 0
    for csv in out.glob("*.csv"):
        df = pd.read_csv(csv)
        for col, (low, high) in BOUNDED.items():
            if not {col, f"{col}_lo", f"{col}_hi"} <= set(df.columns):
                continue
            ok = df[col].notna() & df[f"{col}_lo"].notna()
            v, lo, hi = (df.loc[ok, c] for c in (col, f"{col}_lo", f"{col}_hi"))
            assert (lo >= low - 1e-9).all() and (hi <= high + 1e-9).all(), (csv.name, col)
            assert (lo <= v + 1e-9).all() and (v <= hi + 1e-9).all(), (csv.name, col)
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("phrase", ["changes nothing", "no trend", "significant at the 5% level",
                                    "nan", "none shown"])
def test_no_templated_claim_survives(quick_report, phrase):
    """Phrases the report used to print whatever the numbers said (or a missing number)."""
    out, _ = quick_report
    prose = "\n".join(line for line in (out / "report.md").read_text().splitlines()
                      if not line.startswith(("|", "```", "![")))
    assert not re.search(rf"\b{re.escape(phrase)}\b", prose)
