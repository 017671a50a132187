"""Protocol invariants, property-based: whatever the strategies, the rules of the game hold.

Every registered strategy that plays without training takes part (``qlearning``
with random tables stands in for a learner: it picks among legal actions
only, which exercises every action the protocol allows), over random
P, T, first movers, populations and reservation ranges, empty ones included.
Strategies that play at NegMAS's pace (``negmas``, ``genius``) are left to
the contract test, which plays them over the same kinds of games.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from market.game import qtable
from market.game.protocol import Side, negotiate, negotiation_bytes
from market.game.rules import BUYER, SELLER, Observation, Protocol


def playable_names() -> list[str]:
    """Registered strategies that can play from their constructor alone, plus qlearning."""
    out = []
    for name in strategies.names():
        cls = strategies.get(name)
        if cls.classifier.get("learns") and name != "qlearning":
            continue
        if cls.classifier.get("long_run_time"):  # NegMAS's pace: the contract test plays them
            continue
        out.append(name)
    return out


NAMES = playable_names()


def build(name: str, side: int, n_members: int, protocol: Protocol, rng: np.random.Generator):
    if name == "qlearning":
        shape = (n_members, 2, qtable.n_rows(protocol), protocol.n_actions)
        return strategies.make(name, side, n_members, protocol, tables=rng.random(shape),
                               learning=False)
    return strategies.make(name, side, n_members, protocol)


@st.composite
def games(draw):
    P = draw(st.integers(2, 8))
    T = draw(st.integers(1, 6))
    n = draw(st.integers(1, 8))
    bound = st.integers(0, P + 1)  # 0 and P + 1 put a reservation off the grid
    return {
        "P": P,
        "T": T,
        "n": n,
        "names": (draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))),
        "members": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "first": draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        "ranges": [
            (draw(st.lists(bound, min_size=n, max_size=n)),
             draw(st.lists(bound, min_size=n, max_size=n)))
            for _ in range(2)
        ],
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def play(game):
    rng = np.random.default_rng(game["seed"])
    protocol = Protocol(game["P"], game["T"])
    n = game["n"]
    sides, players = [], []
    for side in (SELLER, BUYER):
        m = game["members"][side]
        player = build(game["names"][side], side, m, protocol, rng)
        lo, hi = (np.array(x, dtype=np.int64) for x in game["ranges"][side])
        players.append(player)
        sides.append(Side([player], np.zeros(n, dtype=np.intp), rng.integers(0, m, n), lo, hi))
    first = np.array(game["first"], dtype=np.int8)
    return protocol, players, sides, negotiate(protocol, sides[0], sides[1], first, rng)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games())
def test_protocol_invariants(game):
    protocol, players, sides, rec = play(game)
    P, T = protocol.prices, protocol.rounds
    for i in range(len(rec)):
        k = int(rec.n_moves[i])
        acts = rec.actions[i]
        assert 1 <= k <= 2 * T  # nothing runs past 2T moves
        assert (acts[k:] == -1).all()
        # an offer at move 0, offers only while legal, and the last move ends it
        for m in range(k):
            assert protocol.legal(m)[acts[m]], (m, acts[m])
        assert (acts[: k - 1] < P).all()
        assert acts[k - 1] in (P, P + 1)
        assert acts[0] < P
        # a deal ends with accept at the other side's last offer, no deal with reject
        if rec.level[i] > 0:
            assert acts[k - 1] == P
            assert k >= 2 and acts[k - 2] < P
            assert rec.level[i] == acts[k - 2] + 1
        else:
            assert acts[k - 1] == P + 1
        # first mover at most T offers, second at most T - 1
        offers = acts[:k] < P
        assert offers[0::2].sum() <= T
        assert offers[1::2].sum() <= T - 1
        # the record says the same
        neg = rec.negotiation(i)
        assert len(neg.moves) == k
        assert neg.deal_level == (int(rec.level[i]) or None)
        assert neg.rounds_used == (k + 1) // 2


class Spy:
    """Plays uniformly random legal actions and keeps every observation it gets."""

    name = "spy"

    def __init__(self, side: int) -> None:
        self.side = side
        self.seen: list[Observation] = []

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        self.seen.append(obs)
        legal = np.flatnonzero(obs.legal)
        return legal[rng.integers(0, legal.size, len(obs))]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 6), st.integers(0, 1), st.integers(0, 10_000))
def test_observation_matches_the_history(P, T, first, seed):
    """Each mover sees the opponent's last offer, the one before it, its own last, its round."""
    protocol = Protocol(P, T)
    spies = [Spy(SELLER), Spy(BUYER)]
    rec = negotiate(
        protocol,
        Side.single(spies[0], 1, 1, P),
        Side.single(spies[1], 1, 1, P),
        first,
        np.random.default_rng(seed),
    )
    acts = rec.actions[0]
    offers = {SELLER: [], BUYER: []}
    seen = {SELLER: iter(spies[0].seen), BUYER: iter(spies[1].seen)}
    for m in range(int(rec.n_moves[0])):
        side = int(rec.mover(m)[0])
        obs = next(seen[side])
        opp = offers[1 - side]
        assert obs.move == m and obs.t == protocol.round_of(m)
        assert obs.offer[0] == (opp[-1] if opp else 0)
        assert obs.prev_offer[0] == (opp[-2] if len(opp) > 1 else 0)
        assert obs.own[0] == (offers[side][-1] if offers[side] else 0)
        assert bool(obs.first[0]) == (side == first)
        if acts[m] < P:
            offers[side].append(int(acts[m]) + 1)


@pytest.mark.parametrize("bad", [-1, -3, 7])
def test_out_of_range_action_indices_are_refused(bad):
    """-1 would otherwise read as "reject" through numpy's negative indexing."""
    from market.game.protocol import IllegalAction

    class Broken:
        name = "broken"

        def act(self, obs, rng):
            return np.full(len(obs), 4 if obs.move == 0 else bad)  # open at 5: no quick deal

    protocol = Protocol(5, 3)
    seller = Side.single(Broken(), 2, 1, 5)
    buyer = Side.single(strategies.make("averaging", "buyer"), 2, 1, 5)
    with pytest.raises(IllegalAction):
        negotiate(protocol, seller, buyer, SELLER, np.random.default_rng(0))


def test_each_row_names_its_negotiation_at_every_move():
    """``Observation.negotiation`` is the row's index in the batch, the same at every move of
    one negotiation, whichever rows are still running (strategies keep state by it)."""
    protocol = Protocol(4, 4)
    spies = [Spy(SELLER), Spy(BUYER)]
    n = 9
    rng = np.random.default_rng(3)
    first = rng.integers(0, 2, n)
    rec = negotiate(protocol, Side.single(spies[0], n, 1, 4), Side.single(spies[1], n, 1, 4),
                    first, rng)
    for side, spy in ((SELLER, spies[0]), (BUYER, spies[1])):
        for obs in spy.seen:
            rows = obs.negotiation
            # the rows still running in which this side moves now, in order
            moving = (rec.n_moves > obs.move) & (rec.mover(obs.move) == side)
            np.testing.assert_array_equal(rows, np.flatnonzero(moving))
            np.testing.assert_array_equal(obs.first, first[rows] == side)


@pytest.mark.parametrize("seller, buyer, P, T", [
    ("qlearning", "zi-u", 60, 4),  # a learner scores every action: wide arrays
    ("hardliner", "averaging", 5, 60),  # long negotiations: a long record
])
def test_the_memory_estimate_bounds_what_a_batch_allocates(seller, buyer, P, T):
    """Callers size their batches by negotiation_bytes before running (market, tournament)."""
    import tracemalloc

    protocol, n = Protocol(P, T), 4000
    s = strategies.make(seller, "seller", 1, protocol)
    b = strategies.make(buyer, "buyer", 1, protocol)
    negotiate(protocol, Side.single(s, 2, 1, P), Side.single(b, 2, 1, P), 0,
              np.random.default_rng(0))  # compiles (or loads) the rules first: not the batch's
    tracemalloc.start()
    try:
        negotiate(protocol, Side.single(s, n, 1, P), Side.single(b, n, 1, P),
                  np.arange(n) % 2, np.random.default_rng(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= negotiation_bytes(protocol, n) < 4 * peak
