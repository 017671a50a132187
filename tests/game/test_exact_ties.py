"""Subgame perfection in deep games, against backward induction in exact fractions.

The evaluator works in floats, and a deep subgame's values are small (a deal
on the 38th offer at a discount of 0.3 is worth about 1e-20 of the surplus;
after 12 counter-offers at a breakdown risk of 0.9, 1e-12 of it): its ties
must be judged relative to the node being solved, or a deep subgame is all
ties and the "equilibrium" it picks has profitable deviations. The reference
here is written independently of :mod:`market.game.evaluation`: the same
game, its parameters read as the decimals they are written as, solved in
:class:`fractions.Fraction`.
"""

from __future__ import annotations

import random
from fractions import Fraction as Fr
from functools import lru_cache

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest

from market.game import evaluation as ev
from market.game import outcome_sets
from market.game.rules import BUYER, SELLER, Protocol

NONE = (0, None)  # the outcome "no deal"


class Exact:
    """The game in exact fractions: what an outcome is worth, seen from a node."""

    def __init__(self, P: int, T: int, sd: float = 1.0, bd: float = 1.0, q: float = 0.0,
                 sc: float = 0.0, bc: float = 0.0) -> None:
        self.P, self.T = P, T
        self.d = (Fr(str(sd)), Fr(str(bd)))
        self.c = (Fr(str(sc)), Fr(str(bc)))
        self.keep = 1 - Fr(str(q))
        self.worth = lru_cache(maxsize=None)(self._worth)

    def _worth(self, level: int, slot: int, side: int) -> Fr:
        """A deal at ``level`` accepted at move ``slot`` (on offer ``slot - 1``), to ``side``."""
        share = Fr(level, self.P) if side == SELLER else 1 - Fr(level, self.P)
        k = slot - 1
        return share * self.d[side] ** k - k * self.c[side]

    def value(self, outcome: tuple[int, int | None], side: int, m: int) -> Fr:
        """The expectation, from a node at move ``m``, of the path that makes ``outcome``:
        its worth times the chance to survive the counter-offers on the way."""
        level, slot = outcome
        if level == 0:
            return Fr(0)
        return self.worth(level, slot, side) * self.keep ** (slot - max(m, 1))

    def legal(self, m: int) -> tuple[bool, bool]:
        """(offers allowed, accept/reject allowed) at move ``m``."""
        if m == 0:
            return True, False
        return (m - 1) // 2 != self.T - 1, True

    def outcome_sets(self, first: int) -> set[tuple[int, int | None]]:
        """Every pure SPE outcome from the root: in each subgame, a child's outcome is
        reachable when the mover weakly prefers it to the worst every other child can be
        made to give it."""
        P, T = self.P, self.T
        after: dict[int, set] = {}  # offer level on the table at move m + 1 -> its set
        for m in range(2 * T - 1, -1, -1):
            mover = first if m % 2 == 0 else 1 - first
            offers, answers = self.legal(m)
            children_offer = {L: after[L] for L in range(1, P + 1)} if offers else {}
            worst = {L: min(self.value(o, mover, m) for o in s)
                     for L, s in children_offer.items()}
            now: dict[int, set] = {}
            for p in ([0] if m == 0 else range(1, P + 1)):
                kids = {("offer", L): s for L, s in children_offer.items()}
                w = {("offer", L): v for L, v in worst.items()}
                if answers:
                    kids[("accept",)] = {(p, m)}
                    kids[("reject",)] = {NONE}
                    w[("accept",)] = self.value((p, m), mover, m)
                    w[("reject",)] = Fr(0)
                found = set()
                for a, s in kids.items():
                    bar = max((v for b, v in w.items() if b != a), default=None)
                    found |= {o for o in s if bar is None or self.value(o, mover, m) >= bar}
                now[p] = found
            after = now
        return {(lv, None if lv == 0 else slot - 1) for lv, slot in after[0]}

    def profile_deviation(self, policies: tuple[np.ndarray, np.ndarray], first: int
                          ) -> tuple[Fr, int]:
        """The largest exact gain of a one-shot deviation over a pure profile, in any
        subgame (relative to the node's own discount), and how many nodes have one."""
        P, T = self.P, self.T
        nxt: dict[int, tuple[Fr, Fr]] = {}
        worst, count = Fr(0), 0
        for m in range(2 * T - 1, -1, -1):
            mover = first if m % 2 == 0 else 1 - first
            role = m % 2
            offers, answers = self.legal(m)
            keep = self.keep if m >= 1 else Fr(1)
            now = {}
            for p in ([0] if m == 0 else range(1, P + 1)):
                vals = {}
                if offers:
                    for L in range(1, P + 1):
                        vs, vb = nxt[L]
                        vals[L - 1] = (keep * vs, keep * vb)
                if answers:
                    vals[P] = (self.worth(p, m, SELLER), self.worth(p, m, BUYER))
                    vals[P + 1] = (Fr(0), Fr(0))
                row = 0 if m == 0 else 1 + ((m - 1) // 2) * P + (p - 1)
                a = int(np.argmax(policies[mover][role, row]))
                assert a in vals, f"the profile plays an illegal action at move {m}"
                best = max(v[mover] for v in vals.values())
                gain = best - vals[a][mover]
                if gain > 0:
                    count += 1
                    scale = self.d[mover] ** max(m - 1, 0)
                    worst = max(worst, gain / scale)
                now[p] = vals[a]
            nxt = now
        return worst, count


def spe_sets(protocol: Protocol) -> dict[int, set]:
    found = outcome_sets.spe_outcome_offers(protocol)
    return {side: {(lv, (off if lv else None)) for lv, off, _, _ in found[name]}
            for side, name in ((SELLER, "seller"), (BUYER, "buyer"))}


# --- the referee's reproducers -----------------------------------------------------------------
def test_a_deep_discounted_game_chooses_its_unique_spe_and_says_so():
    """P = 5, T = 20, both discounts 0.3, Buyer first: the unique SPE pays (0.2, 0.8); the
    absolute tolerance made the deep subgames ties and chose (0.4, 0.6), with profitable
    one-shot deviations at 25 nodes, printed as subgame perfect."""
    pr = Protocol(5, 20, 0.3, 0.3)
    s, b = ev.spe(pr)
    assert ev.values(s, b, pr, BUYER) == pytest.approx((0.2, 0.8), abs=1e-12)
    exact = Exact(5, 20, 0.3, 0.3)
    for first in (SELLER, BUYER):
        assert exact.profile_deviation((s, b), first) == (0, 0)
    assert not ev.subgame_gaps(s, b, pr, policies=True).any()


def test_a_forty_round_game_chooses_the_tie_broken_split():
    pr = Protocol(4, 40, 0.5, 0.5)
    s, b = ev.spe(pr)
    exact = Exact(4, 40, 0.5, 0.5)
    for first in (SELLER, BUYER):
        assert exact.profile_deviation((s, b), first) == (0, 0)
    # the old absolute tolerance chose (0.5, 0.5) for either first mover
    assert ev.values(s, b, pr, SELLER) == pytest.approx((0.75, 0.25), abs=1e-12)
    assert ev.values(s, b, pr, BUYER) == pytest.approx((0.25, 0.75), abs=1e-12)


def test_the_outcome_sets_under_a_high_breakdown_risk_are_exact():
    """P = 12, T = 7, discounts 0.95, breakdown 0.9: only {11} (Seller first) and {1}
    (Buyer first) are subgame perfect; root weights made {10, 11} and {1, 2}."""
    pr = Protocol(12, 7, 0.95, 0.95, 0.9)
    got = spe_sets(pr)
    assert {lv for lv, _ in got[SELLER]} == {11}
    assert {lv for lv, _ in got[BUYER]} == {1}
    exact = Exact(12, 7, 0.95, 0.95, 0.9)
    assert got == {f: exact.outcome_sets(f) for f in (SELLER, BUYER)}


def test_a_deep_profitable_deviation_is_never_called_subgame_perfect():
    """The SPE with one deep move spoiled: a gain worth 1e-20 of the surplus at the root is
    the whole deal at its node, and the gaps say so."""
    pr = Protocol(5, 20, 0.3, 0.3)
    s, b = ev.spe(pr)
    P, T = 5, 20
    row = 1 + (T - 1) * P + (4 - 1)  # last round, Buyer's offer 4 on the table
    spoiled = s.copy()
    for role in (0, 1):
        spoiled[role, row] = 0.0
        spoiled[role, row, P + 1] = 1.0  # reject a deal worth 4/5 of its share
    exact = Exact(5, 20, 0.3, 0.3)
    gain, nodes = exact.profile_deviation((spoiled, b), BUYER)
    assert nodes >= 1 and gain > 0
    gaps = ev.subgame_gaps(spoiled, b, pr, policies=True)
    assert gaps[BUYER, SELLER] > 0 or gaps[SELLER, SELLER] > 0


# --- deep games at random ----------------------------------------------------------------------
def deep_games(n: int, seed: int = 7) -> list[tuple]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        P = rnd.randint(2, 6)
        T = rnd.choice([1, 2, 3, 5, 8, 13, 21, 30, 40])
        d = [rnd.choice([1.0, 0.95, 0.9, 0.7, 0.5, 0.3, 0.1]) for _ in range(2)]
        q = rnd.choice([0.0, 0.0, 0.3, 0.5, 0.9, 0.99])
        c = [rnd.choice([0.0, 0.0, 0.01, 0.05, 0.1]) for _ in range(2)]
        out.append((P, T, d[0], d[1], q, c[0], c[1]))
    return out


#: the finest pressure a game takes (pressure.RESOLUTION, 1e-9), each kind alone and together,
#: where the evaluator must still be exact
SMALLEST = [(5, 5, 1.0, 1.0, 0.0, 1e-9, 1e-9), (5, 20, 1.0, 1.0, 0.0, 1e-9, 1e-9),
            (5, 5, 1 - 1e-9, 1 - 1e-9, 0.0, 0.0, 0.0), (4, 13, 1 - 1e-9, 1.0, 0.0, 0.0, 1e-9),
            (5, 8, 1.0, 1.0, 1e-9, 0.0, 0.0), (6, 5, 1 - 1e-9, 1 - 1e-9, 1e-9, 1e-9, 1e-9)]


@pytest.mark.parametrize("game", deep_games(40) + SMALLEST,
                         ids=lambda g: "P{}-T{}-d{},{}-Q{}-c{},{}".format(*g))
def test_deep_games_agree_with_exact_backward_induction(game):
    """The chosen SPE has no profitable one-shot deviation at any node (exactly), the
    evaluator's gaps are 0 for it, and the outcome sets equal the exact ones."""
    P, T, sd, bd, q, sc, bc = game
    pr = Protocol(P, T, sd, bd, q, sc, bc)
    exact = Exact(*game)
    s, b = ev.spe(pr)
    for first in (SELLER, BUYER):
        assert exact.profile_deviation((s, b), first) == (0, 0), f"first={first}"
    assert not ev.subgame_gaps(s, b, pr, policies=True).any()
    if outcome_sets.outcome_sets_affordable(pr):
        want = {f: exact.outcome_sets(f) for f in (SELLER, BUYER)}
        if not pr.timed:  # without time pressure an outcome is its level alone
            want = {f: {(lv, None) for lv, _ in w} for f, w in want.items()}
        assert spe_sets(pr) == want


@pytest.mark.parametrize(("flags", "words"), [
    (["--seller-cost", "1e-13", "--buyer-cost", "1e-13"],
     "--seller-cost must be a number in [0, 1) (0, or at least 1e-09 from it) (got '1e-13')"),
    (["--discount", "0.9999999999999"], "(1, or at least 1e-09 from it)"),
    (["--breakdown", "5e-10"], "--breakdown must be a number in [0, 1) (0, or at least 1e-09"),
])
def test_a_pressure_finer_than_the_evaluator_can_tell_is_refused_naming_the_smallest(flags,
                                                                                      words):
    """Below the tie tolerance the exact evaluator once picked a deal that is not subgame
    perfect and called it one: such a pressure is refused in one line, with the smallest
    one it takes; at that smallest one the evaluator is exact again."""
    done = cli_run.run("evaluate", "--spe", "--prices", "5", "--rounds", "5", *flags)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    ok = cli_run.run("evaluate", "--spe", "--prices", "5", "--rounds", "5", "--json",
                     "--seller-cost", "1e-9", "--buyer-cost", "1e-9")
    assert ok.returncode == 0, ok.stderr
