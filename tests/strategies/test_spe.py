"""The ``spe`` strategy: plays the subgame-perfect equilibrium through the real protocol."""

import numpy as np
import pytest

import strategies
from market.game import evaluation as ev
from market.game import policies, qtable
from market.game.protocol import Side, negotiate
from market.game.record import two_agent_rewards
from market.game.rules import BUYER, SELLER, Observation, Protocol


def play(pr: Protocol, seller, buyer, first, n=8, seed=0):
    rng = np.random.default_rng(seed)
    P = pr.prices
    return negotiate(pr, Side.single(seller, n, 1, P), Side.single(buyer, n, 1, P), first, rng)


def test_registered_with_an_honest_classifier():
    cls = strategies.get("spe")
    assert cls.needs_protocol
    assert cls.classifier["individually_rational"] is False  # only two-agent rewards count
    assert cls.classifier["objective"] == "two-agent rewards"
    assert not cls.classifier["stochastic"] and not cls.classifier["learns"]


@pytest.mark.parametrize("P,T", [(2, 1), (5, 5), (7, 3)])
def test_spe_against_spe_first_mover_takes_all(P, T):
    pr = Protocol(P, T)
    s = strategies.make("spe", "seller", protocol=pr)
    b = strategies.make("spe", "buyer", protocol=pr)
    first = np.arange(10) % 2  # alternate the first mover
    rec = play(pr, s, b, first, n=10)
    # The first mover asks for its extreme, the second accepts at once.
    assert (rec.n_moves == 2).all()
    assert (rec.level == np.where(first == SELLER, P, 1)).all()
    rs, rb = two_agent_rewards(rec)
    sp, bp = ev.spe(pr)
    for f in (SELLER, BUYER):
        assert rs[first == f].mean() == pytest.approx(ev.values(sp, bp, pr, f)[0])
        assert rb[first == f].mean() == pytest.approx(ev.values(sp, bp, pr, f)[1])


def test_act_is_a_batch_lookup_matching_the_policy():
    pr = Protocol(4, 3)
    b = strategies.make("spe", "buyer", protocol=pr)
    _, bp = ev.spe(pr)
    n = 12
    rng = np.random.default_rng(1)
    offer = rng.integers(1, pr.prices + 1, n)
    first = rng.random(n) < 0.5
    # Move 3: the Buyer moved second when first is False (m = 2t+1, t = 1), a state it
    # can reach; when first is True the same observation belongs to the first mover at m = 4.
    obs = Observation(
        protocol=pr, move=3, offer=offer, own=np.zeros(n, np.int64), first=first,
        lo=np.ones(n, np.int64), hi=np.full(n, pr.prices), member=np.zeros(n, np.intp),
    )
    a = b.act(obs, rng)
    assert a.shape == (n,)
    rows = qtable.row(pr, offer, 1)
    want = bp[np.where(first, 0, 1), rows].argmax(axis=-1)
    assert (a == want).all()


def test_best_response_bounds_what_an_opponent_of_spe_earns():
    """Against a fixed opponent the SPE need not be a best response, but the opponent
    can never do better than its own best response: check both against a greedy learner."""
    pr = Protocol(5, 5)
    rng = np.random.default_rng(3)
    qb = rng.random((2, qtable.n_rows(pr), pr.n_actions))
    sp, _ = ev.spe(pr)
    buyer_pol = policies.greedy_policy(qb, pr)
    v_br_sf, v_br_bf, _ = ev.best_response(sp, BUYER, pr)
    for f, v_br in ((SELLER, v_br_sf), (BUYER, v_br_bf)):
        assert ev.values(sp, buyer_pol, pr, f)[1] <= v_br + 1e-12
    # The equilibrium Buyer is a best response to the equilibrium Seller.
    _, bp = ev.spe(pr)
    assert ev.values(sp, bp, pr, SELLER)[1] == pytest.approx(v_br_sf)
    assert ev.values(sp, bp, pr, BUYER)[1] == pytest.approx(v_br_bf)


def test_spe_follows_the_game_it_is_given():
    # Built for P=3 but handed observations of a P=6 game: it plays that game's equilibrium.
    s = strategies.make("spe", "seller", protocol=Protocol(3, 2))
    b = strategies.make("spe", "buyer", protocol=Protocol(3, 2))
    pr = Protocol(6, 2)
    rec = play(pr, s, b, SELLER, n=3)
    assert (rec.level == 6).all()


def test_classifier_states_only_what_differs(expected_classifier):
    expected_classifier("spe", individually_rational=False, objective="two-agent rewards")
