"""Our strategies inside NegMAS: a negotiation in NegMAS's SAOMechanism ends as in our protocol.

For every pair of our deterministic strategies and both first movers, the
same agreement, the same price and the same number of moves; a saved
Q-table plays inside NegMAS as it does here; the game (P, T, the acceptable
range) is read from the mechanism, whatever the issue's values.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("negmas")

from negmas import SAOMechanism, make_issue  # noqa: E402
from negmas.preferences import AffineUtilityFunction  # noqa: E402

import strategies  # noqa: E402
from market.game import qtable  # noqa: E402
from market.game.protocol import Side, negotiate  # noqa: E402
from market.game.rules import BUYER, SELLER, Protocol  # noqa: E402
from market.game.table_files import TablePair, save_tables  # noqa: E402
from market.interop.negmas_adapter import StrategyNegotiator, run_negotiation  # noqa: E402

DETERMINISTIC = [n for n in strategies.names()
                 if not strategies.get(n).classifier["stochastic"]
                 and not strategies.get(n).classifier.get("long_run_time")]
GAME = Protocol(7, 4)
FLOOR, CEILING = 2, 6


def ours(seller, buyer, first, protocol=GAME, floor=FLOOR, ceiling=CEILING):
    make = lambda spec, side: (  # noqa: E731
        strategies.specs.build(spec, side, protocol) if isinstance(spec, str) else spec)
    rec = negotiate(protocol, Side.single(make(seller, SELLER), 1, floor, protocol.prices),
                    Side.single(make(buyer, BUYER), 1, 1, ceiling), first,
                    np.random.default_rng(0))
    return int(rec.level[0]), int(rec.n_moves[0])


def test_the_deterministic_strategies_are_the_registered_ones():
    assert {"averaging", "boulware", "conceder", "hardliner", "linear", "spe",
            "tit-for-tat"} <= set(DETERMINISTIC)


@pytest.mark.parametrize("first", [SELLER, BUYER])
@pytest.mark.parametrize("seller", DETERMINISTIC)
def test_every_pair_ends_in_negmas_as_in_our_protocol(seller, first):
    """Where a side's reserved value leaves part of the grid out, ``spe`` (which ignores
    reservation) is refused in NegMAS rather than accept below it; every other pair ends
    exactly as in our protocol."""
    for buyer in DETERMINISTIC:
        args = dict(prices=GAME.prices, rounds=GAME.rounds, seller_floor=FLOOR,
                    buyer_ceiling=CEILING, first=first)
        if "spe" in (seller, buyer):
            with pytest.raises(ValueError, match="ignores reserved values"):
                run_negotiation(seller, buyer, **args)
            args.update(seller_floor=1, buyer_ceiling=GAME.prices)  # the whole grid: it plays
        out = run_negotiation(seller, buyer, **args)
        expected = ours(seller, buyer, first, GAME, args["seller_floor"], args["buyer_ceiling"])
        assert (out.level, out.n_moves) == expected, (seller, buyer, first)


def test_a_saved_q_table_plays_inside_negmas_as_here(tmp_path):
    """Random tables have no ties, so the greedy learner is deterministic."""
    rng = np.random.default_rng(3)
    shape = (2, qtable.n_rows(GAME), GAME.n_actions)
    path = tmp_path / "t.npz"
    save_tables(path, TablePair(GAME, rng.random(shape), rng.random(shape)))
    spec = f"qlearning:{path}"
    for opponent in ("averaging", "boulware", "tit-for-tat"):
        for first in (SELLER, BUYER):
            out = run_negotiation(spec, opponent, prices=GAME.prices, rounds=GAME.rounds,
                                  seller_floor=FLOOR, buyer_ceiling=CEILING, first=first)
            assert (out.level, out.n_moves) == ours(spec, opponent, first)


def test_the_game_is_read_from_the_mechanism_whatever_the_issue_values():
    """A price issue 0..100 with NegMAS's own utility functions: P = 101 values, T = n_steps,
    the ranges from the reserved values (Seller 20-100, Buyer 0-80), sides from the
    utilities; the negotiation ends as ours on levels 21..101 and 1..81."""
    issues = [make_issue((0, 100), "price")]
    seller_u = AffineUtilityFunction(weights=[0.01], issues=issues, reserved_value=0.2)
    buyer_u = AffineUtilityFunction(weights=[-0.01], bias=1.0, issues=issues,
                                    reserved_value=0.2)
    for first in (SELLER, BUYER):
        mech = SAOMechanism(issues=issues, n_steps=10)
        s, b = StrategyNegotiator("boulware"), StrategyNegotiator("conceder")
        pairs = [(s, seller_u), (b, buyer_u)]
        for neg, u in pairs if first == SELLER else pairs[::-1]:
            mech.add(neg, ufun=u)
        mech.run()
        assert (s.protocol, s.side, s.lo, s.hi) == (Protocol(101, 10), SELLER, 21, 101)
        assert (b.side, b.lo, b.hi) == (BUYER, 1, 81)
        level, moves = ours("boulware", "conceder", first, Protocol(101, 10), 21, 81)
        assert mech.agreement == (level - 1,)  # level k is the price k - 1
        assert sum(len(h.new_offers) for h in mech.history) + 1 == moves


def test_side_can_be_given_and_bad_games_are_refused():
    issues = [make_issue((1, 5), "price"), make_issue((1, 3), "quantity")]
    mech = SAOMechanism(issues=issues, n_steps=3)
    flat = AffineUtilityFunction(weights=[0.0, 0.0], issues=issues)
    mech.add(StrategyNegotiator("averaging", side="seller"), ufun=flat)
    mech.add(StrategyNegotiator("averaging", side="buyer"), ufun=flat)
    with pytest.raises(ValueError, match="single discrete price issue"):
        mech.run()
    with pytest.raises(ValueError, match="unknown strategy"):
        StrategyNegotiator("nope")


def test_spe_refuses_a_reserved_value_it_cannot_honour_and_checks_memory_first():
    """spe ignores reservation (its objective is the two-agent game): rather than accept
    deals below the reserved value inside NegMAS, it refuses in one line; and a game whose
    backward induction would not fit in memory is refused before anything is built."""
    from market.errors import UsageError
    from market.game.rules import Protocol
    from market.interop.negmas_adapter import run_negotiation
    from strategies.spe import SubgamePerfect

    with pytest.raises(ValueError, match="ignores reserved values"):
        run_negotiation("spe", "averaging", prices=11, rounds=4, seller_floor=5)
    out = run_negotiation("spe", "averaging", prices=11, rounds=4)  # whole range: it plays
    assert out.level >= 0
    with pytest.raises(UsageError, match="spe's backward induction for P=1000, T=1000"):
        SubgamePerfect(0, 1, protocol=Protocol(1000, 1000))


def test_negmas_own_ending_risk_is_read_as_the_games_breakdown_risk():
    """``pend``, NegMAS's probability that a negotiation ends at each step, is this game's
    breakdown risk: a strategy built by the adapter plays the game with it."""
    issues = [make_issue((0, 20), "price")]
    seller_u = AffineUtilityFunction(weights=[0.05], issues=issues, reserved_value=0.0)
    buyer_u = AffineUtilityFunction(weights=[-0.05], bias=1.0, issues=issues,
                                    reserved_value=0.0)
    for _ in range(50):  # NegMAS may end a session before its first step: run another
        mech = SAOMechanism(issues=issues, n_steps=6, pend=0.25)
        s, b = StrategyNegotiator("boulware"), StrategyNegotiator("conceder")
        mech.add(s, ufun=seller_u)
        mech.add(b, ufun=buyer_u)
        mech.run()
        if s.strategy is not None and b.strategy is not None:
            break
    assert s.protocol == Protocol(21, 6, breakdown=0.25) == b.protocol
