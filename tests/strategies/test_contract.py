"""The contract every registered strategy keeps, checked for each one automatically.

A new strategy module is picked up by the registry and, by the same token,
by every test here (after the Axelrod library's shared strategy harness):
its classifier is well formed and its name is a usable spec; it plays the
sides it claims and refuses the others; it plays only legal actions over
random games (empty and off-grid reservation ranges included); it never
trades at a loss where its classifier says it is individually rational; it
decides the same whatever the random stream where its classifier says it is
not stochastic; and it does not change from outcomes unless it says it
learns.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from market.game.protocol import Side, negotiate
from market.game.rules import BUYER, SELLER, SIDE_NAMES, Protocol
from market.sim import engine
from strategies import compiled, specs
from strategies.base import MarketSetting

NAMES = strategies.names()
CLASSIFIER_KEYS = {"sides", "learns", "stochastic", "individually_rational", "memory"}
GAMES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: fewer games for strategies that play at another library's speed (NegMAS, one at a time)
SLOW_GAMES = settings(GAMES, max_examples=12)


def games_for(name: str) -> settings:
    return SLOW_GAMES if strategies.get(name).classifier.get("long_run_time") else GAMES


def sides_of(name: str) -> list[int]:
    return [SIDE_NAMES.index(s) for s in strategies.get(name).classifier["sides"]]


def build(name: str, side: int, n_members: int, protocol: Protocol):
    """A strategy as every command builds one: from its name alone."""
    return strategies.make(name, side, n_members, protocol)


@st.composite
def games(draw, name: str):
    """A batch of negotiations of ``name`` on one side against any registered strategy."""
    P = draw(st.integers(2, 9))
    T = draw(st.integers(1, 6))
    n = draw(st.integers(1, 12))
    side = draw(st.sampled_from(sides_of(name)))
    opponents = [o for o in NAMES if 1 - side in sides_of(o)]
    bound = st.integers(0, P + 1)  # 0 and P + 1 put a reservation off the grid
    return {
        "P": P, "T": T, "n": n, "side": side,
        "opponent": draw(st.sampled_from(opponents)),
        "members": draw(st.integers(1, 3)),
        "first": draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
        "lo": [draw(st.lists(bound, min_size=n, max_size=n)) for _ in range(2)],
        "hi": [draw(st.lists(bound, min_size=n, max_size=n)) for _ in range(2)],
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def play(name: str, game: dict, seed: int | None = None):
    """Negotiate the game; the player under test has ``members`` members, drawn per row."""
    protocol = Protocol(game["P"], game["T"])
    n, side, m = game["n"], game["side"], game["members"]
    pick = np.random.default_rng(game["seed"])
    member = pick.integers(0, m, n)
    player = build(name, side, m, protocol)
    opponent = build(game["opponent"], 1 - side, 1, protocol)
    bounds = [(np.array(game["lo"][s], dtype=np.int64), np.array(game["hi"][s], dtype=np.int64))
              for s in (SELLER, BUYER)]
    sides = [None, None]
    sides[side] = Side([player], np.zeros(n, dtype=np.intp), member, *bounds[side])
    sides[1 - side] = Side.single(opponent, n, 1, 1)
    sides[1 - side].lo, sides[1 - side].hi = bounds[1 - side]
    rng = np.random.default_rng(game["seed"] if seed is None else seed)
    first = np.array(game["first"], dtype=np.int8)
    return protocol, player, sides, negotiate(protocol, sides[0], sides[1], first, rng)


@pytest.mark.parametrize("name", NAMES)
def test_classifier_states_the_rule(name):
    cls = strategies.get(name)
    assert cls.name == name
    assert set(cls.classifier) >= CLASSIFIER_KEYS
    assert set(cls.classifier["sides"]) <= set(SIDE_NAMES) and cls.classifier["sides"]
    for key in ("learns", "stochastic", "individually_rational"):
        assert isinstance(cls.classifier[key], bool), key
    assert isinstance(cls.classifier["memory"], str)
    assert cls.__doc__ and cls.__doc__.strip(), "a one-line docstring says what it does"


@pytest.mark.parametrize("name", NAMES)
def test_name_is_a_spec(name):
    """Users type the name in options, mixes (``NAME=SHARE,...``) and grids (``mix.NAME``)."""
    assert name == name.strip().lower() and not set(name) & set(":=,. ")
    assert specs.parse(name) == specs.Spec(name)


@pytest.mark.parametrize("name", NAMES)
def test_plays_the_sides_it_claims_and_refuses_the_others(name):
    protocol = Protocol(5, 5)
    for side in (SELLER, BUYER):
        if side in sides_of(name):
            player = build(name, side, 2, protocol)
            assert player.side == side and player.n_members == 2
        else:
            with pytest.raises(ValueError, match="cannot play"):
                build(name, side, 1, protocol)


@pytest.mark.parametrize("name", NAMES)
def test_plays_only_legal_actions(name):
    """``negotiate`` refuses (raises) any illegal action; every row gets one action."""

    @games_for(name)
    @given(games(name))
    def check(game):
        protocol, _, _, rec = play(name, game)
        assert (rec.n_moves >= 1).all() and (rec.n_moves <= protocol.max_moves).all()

    check()


@pytest.mark.parametrize("name", [n for n in NAMES
                                  if strategies.get(n).classifier["individually_rational"]])
def test_never_trades_at_a_loss_when_it_says_so(name):
    """A Seller never sells below its floor, a Buyer never buys above its ceiling.

    Only a reservation off the grid (a floor above every price, a ceiling
    below every price) is exempt: the protocol forces an opening offer,
    which may be accepted.
    """

    @games_for(name)
    @given(games(name))
    def check(game):
        protocol, player, sides, rec = play(name, game)
        deal = rec.level > 0
        lo, hi = sides[player.side].lo, sides[player.side].hi
        if player.side == SELLER:
            ok = deal & (lo <= protocol.prices)
            assert (rec.level[ok] >= lo[ok]).all()
        else:
            ok = deal & (hi >= 1)
            assert (rec.level[ok] <= hi[ok]).all()

    check()


@pytest.mark.parametrize("name", [n for n in NAMES
                                  if not strategies.get(n).classifier["stochastic"]])
def test_deterministic_when_it_says_so(name):
    """Against a deterministic opponent, the random stream changes nothing."""
    deterministic = [o for o in NAMES if not strategies.get(o).classifier["stochastic"]]

    @games_for(name)
    @given(games(name), st.sampled_from(deterministic))
    def check(game, opponent):
        if 1 - game["side"] not in sides_of(opponent):
            return
        game = {**game, "opponent": opponent}
        _, _, _, a = play(name, game, seed=1)
        _, _, _, b = play(name, game, seed=2)
        assert np.array_equal(a.actions, b.actions) and np.array_equal(a.level, b.level)

    check()


@pytest.mark.parametrize("name", [n for n in NAMES if not strategies.get(n).classifier["learns"]])
def test_does_not_change_from_outcomes_unless_it_learns(name):
    """``learn`` with any rewards leaves the decisions of a non-learner as they were."""
    game = {"P": 6, "T": 4, "n": 50, "side": sides_of(name)[0], "opponent": "zi-u",
            "members": 2, "first": [i % 2 for i in range(50)], "seed": 7,
            "lo": [[1] * 50, [1] * 50], "hi": [[6] * 50, [6] * 50]}
    if 1 - game["side"] not in sides_of("zi-u"):
        pytest.skip("zi-u cannot play the other side")
    _, player, sides, rec = play(name, game)
    state = {k: np.copy(v) for k, v in vars(player).items() if isinstance(v, np.ndarray)}
    rows = np.arange(len(rec))
    player.learn(rec, rows, sides[player.side].member, np.ones(len(rec)))
    for k, v in state.items():
        assert np.array_equal(getattr(player, k), v), f"{name}.{k} changed"


@pytest.mark.parametrize("name", [n for n in NAMES if compiled.has_form(strategies.get(n))])
def test_compiled_loop_and_batch_decision_agree_move_by_move(name):
    """The compiled engine's negotiation loop and the strategy's batch ``act`` (the lockstep
    path) make the same moves and the same draws over random games, against any compiled
    opponent."""

    @games_for(name)
    @given(games(name))
    def check(game):
        if not compiled.has_form(strategies.get(game["opponent"])):
            return
        protocol, _, sides, rec = play(name, game)
        first = np.array(game["first"], dtype=np.int8)
        rng_a = np.random.default_rng(game["seed"])
        rng_b = np.random.default_rng(game["seed"])
        fast = engine.negotiate(protocol, sides[0], sides[1], first, rng_a)
        slow = negotiate(protocol, sides[0], sides[1], first, rng_b)
        np.testing.assert_array_equal(fast.actions, slow.actions)
        np.testing.assert_array_equal(fast.level, slow.level)
        assert rng_a.bit_generator.state == rng_b.bit_generator.state

    check()


@pytest.mark.parametrize("name", NAMES)
def test_a_member_carries_all_its_state_when_it_changes_population(name):
    """What a trader takes along when it changes strategy (``seat``): every per-member
    array the compiled engine reads, so a copied member plays as its original."""
    protocol = Protocol(5, 3)
    side = sides_of(name)[0]
    rng = np.random.default_rng(5)
    market = MarketSetting(clock_buckets=2, learner_params="drawn", rng=rng)
    cls = strategies.get(name)
    source = cls.for_market(side, 3, protocol, market)
    state = source.kernel_state()
    for arr in (state.tables, state.wait, state.played):
        if arr.shape[0] == 3:
            arr[...] = rng.integers(1, 9, arr.shape)  # the strategy's own arrays, in place
    state = source.kernel_state()
    target = cls.for_market(side, 2, protocol, market)
    before = target.kernel_state()
    target.seat(np.array([2]), source, np.array([2]))
    after = target.kernel_state()
    assert target.n_members == 3
    for field in ("params", "tables", "wait", "played"):
        theirs, mine, old = (getattr(s, field) for s in (state, after, before))
        if theirs.shape[0] == 3:
            assert mine.shape == theirs.shape, field
            assert np.array_equal(mine[2], theirs[2]), field
            assert np.array_equal(mine[:2], old[:2]), field


@pytest.mark.parametrize("name", [n for n in NAMES if compiled.has_form(strategies.get(n))])
def test_a_compiled_population_s_member_arrays_are_the_arrays_its_store_holds(name):
    """A trader seated in a population is written in place: each per-member attribute must
    be the engine's own array (adopted), or the engine would play the member's old state."""
    protocol = Protocol(5, 3)
    cls = strategies.get(name)
    pop = cls.for_market(sides_of(name)[0], 3, protocol,
                         MarketSetting(clock_buckets=2, rng=np.random.default_rng(0)))
    store, _ = pop.store()
    for attr in pop.member_arrays:
        arr = getattr(pop, attr)
        assert np.shares_memory(arr, store.fstore) or np.shares_memory(arr, store.istore), attr
