"""NegMAS negotiators and ANAC agents as strategies: the same games as in NegMAS itself.

A NegMAS negotiator played through our protocol (``negmas:CLASS``,
``genius:AGENT``) must end every negotiation exactly as NegMAS's own
``SAOMechanism`` ends it (agreement, price, number of moves), see the same
lifecycle callbacks in the same order, keep one negotiator per negotiation,
draw its randomness from the protocol's seed, and be refused with one line
naming the fix when the spec is bad.
"""

from __future__ import annotations

import importlib.util
import random

import numpy as np
import pytest

# found, not imported: importing the ANAC agents takes seconds, paid by the first test that
# plays one rather than by every worker's collection
if importlib.util.find_spec("negmas_genius_agents") is None:
    pytest.skip("negmas-genius-agents is not installed (pip install -e '.[negmas]')",
                allow_module_level=True)

from negmas import sao  # noqa: E402

from market.errors import UsageError  # noqa: E402
from market.game.protocol import Side, negotiate  # noqa: E402
from market.game.rules import BUYER, SELLER, Protocol  # noqa: E402
from market.interop.negmas_adapter import run_negotiation  # noqa: E402
from strategies import negmas_agents, specs  # noqa: E402
from strategies.negmas_agents import GeniusAgent, NegmasNegotiator  # noqa: E402

GAME = Protocol(11, 6)
FLOOR, CEILING = 3, 9  # the Seller's and the Buyer's reservation levels

#: deterministic NegMAS negotiators and ANAC agents (no random draws in their code)
DETERMINISTIC = [
    ("negmas", "BoulwareTBNegotiator"),
    ("negmas", "NaiveTitForTatNegotiator"),
    ("negmas", "ToughNegotiator"),
    ("genius", "HardHeaded"),
    ("genius", "NiceTitForTat"),
    ("genius", "AgentGG"),
]


def wrapped(family: str, cls_or_name, side: int, protocol: Protocol = GAME, n: int = 1):
    cls = NegmasNegotiator if family == "negmas" else GeniusAgent
    return cls(side, n, protocol=protocol, negotiator=cls_or_name)


def ours(seller, buyer, first, protocol: Protocol = GAME, floor=FLOOR, ceiling=CEILING, seed=0):
    n = len(np.atleast_1d(first))
    rec = negotiate(protocol, Side.single(seller, n, floor, protocol.prices),
                    Side.single(buyer, n, 1, ceiling), first, np.random.default_rng(seed))
    return rec


def native(seller_cls, buyer_cls, first, protocol: Protocol = GAME):
    return run_negotiation(seller_cls(), buyer_cls(), prices=protocol.prices,
                           rounds=protocol.rounds, seller_floor=FLOOR, buyer_ceiling=CEILING,
                           first=first)


def cls_of(family: str, name: str) -> type:
    return negmas_agents.resolve(family, name)


# --- the same games as in NegMAS ----------------------------------------------------------------
@pytest.mark.parametrize("first", [SELLER, BUYER])
@pytest.mark.parametrize("seller", DETERMINISTIC, ids="-".join)
def test_played_natively_and_through_our_protocol_ends_identically(seller, first):
    for buyer in DETERMINISTIC:
        s_cls, b_cls = cls_of(*seller), cls_of(*buyer)
        expected = native(s_cls, b_cls, first)
        rec = ours(wrapped(seller[0], s_cls, SELLER), wrapped(buyer[0], b_cls, BUYER), first)
        got = (int(rec.level[0]), int(rec.n_moves[0]))
        assert got == (expected.level, expected.n_moves), (seller, buyer, first)


def test_the_agents_compared_are_deterministic():
    """Otherwise the comparison above would prove nothing: the native games do not depend on
    Python's random state."""
    for seller in DETERMINISTIC[3:]:
        outcomes = set()
        for seed in (1, 2):
            random.seed(seed)
            out = native(cls_of(*seller), cls_of("negmas", "LinearTBNegotiator"), SELLER)
            outcomes.add((out.level, out.n_moves))
        assert len(outcomes) == 1, seller


def test_the_documented_pair_deals_at_the_same_price():
    """Boulware Seller vs Conceder Buyer on 101 levels and 10 rounds, as in the interop guide."""
    protocol = Protocol(101, 10)
    for first in (SELLER, BUYER):
        expected = run_negotiation(sao.BoulwareTBNegotiator(), sao.ConcederTBNegotiator(),
                                   prices=101, rounds=10, seller_floor=21, buyer_ceiling=81,
                                   first=first)
        rec = ours(wrapped("negmas", "BoulwareTBNegotiator", SELLER, protocol),
                   wrapped("negmas", "ConcederTBNegotiator", BUYER, protocol), first, protocol,
                   floor=21, ceiling=81)
        assert (int(rec.level[0]), int(rec.n_moves[0])) == (expected.level, expected.n_moves)
        assert expected.level > 0


def recorder(base: type) -> type:
    """A negotiator class that records every callback NegMAS makes, with the step."""

    class Recorder(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.events = []

        def on_negotiation_start(self, state):
            self.events.append(("start", state.step))
            super().on_negotiation_start(state)

        def on_round_start(self, state):
            self.events.append(("round start", state.step))
            super().on_round_start(state)

        def on_round_end(self, state):
            self.events.append(("round end", state.step))
            super().on_round_end(state)

        def on_partner_proposal(self, state, partner_id, offer):
            self.events.append(("partner proposal", state.step, offer))
            super().on_partner_proposal(state, partner_id, offer)

        def on_partner_response(self, state, partner_id, outcome, response):
            self.events.append(("partner response", state.step, outcome, response))
            super().on_partner_response(state, partner_id, outcome, response)

        def on_negotiation_end(self, state):
            self.events.append(("end", state.step, state.agreement))
            super().on_negotiation_end(state)

        def __call__(self, state, dest=None):
            response = super().__call__(state, dest)
            self.events.append(("move", state.step, state.relative_time, state.current_offer,
                                response.response, response.outcome))
            return response

    return Recorder


@pytest.mark.parametrize("first", [SELLER, BUYER])
@pytest.mark.parametrize("opponent", ["LinearTBNegotiator", "ToughNegotiator"])
def test_lifecycle_callbacks_come_as_from_negmas_own_mechanism(first, opponent):
    """Same callbacks, same steps, same relative times, same order. Only when our protocol's
    opponent ends the negotiation is the end not reported (our protocol tells a strategy
    nothing after its last move), so ours is then a prefix of NegMAS's."""
    rec_cls = recorder(sao.NaiveTitForTatNegotiator)
    opp_cls = getattr(sao, opponent)
    expected = rec_cls()
    run_negotiation(expected, opp_cls(), prices=GAME.prices, rounds=GAME.rounds,
                    seller_floor=FLOOR, buyer_ceiling=CEILING, first=first)
    player = wrapped("negmas", rec_cls, SELLER)
    ours(player, wrapped("negmas", opp_cls, BUYER), first)
    got = player._sessions[0].negotiator.events
    assert got == expected.events[:len(got)]
    last_move = max(i for i, e in enumerate(expected.events) if e[0] == "move")
    assert len(got) > last_move  # every move and the callbacks before it
    assert ("start", 0) in got and any(e[0] == "partner proposal" for e in got)
    if expected.events[last_move][4] != sao.ResponseType.REJECT_OFFER:  # it ended it itself
        assert got == expected.events


def test_one_negotiator_per_negotiation():
    """A batch of different negotiations in one call ends as each one alone."""
    n = 6
    floors = np.array([1, 3, 5, 7, 2, 9])
    ceilings = np.array([11, 9, 6, 8, 4, 10])
    first = np.array([0, 1, 1, 0, 0, 1])

    def play(rows):
        cls = cls_of("negmas", "NaiveTitForTatNegotiator")
        s, b = wrapped("negmas", cls, SELLER, n=1), wrapped("negmas", "LinearTBNegotiator", BUYER)
        return negotiate(GAME, Side(
            [s], np.zeros(len(rows), dtype=np.intp), np.zeros(len(rows), dtype=np.intp),
            floors[rows], np.full(len(rows), GAME.prices)),
            Side([b], np.zeros(len(rows), dtype=np.intp), np.zeros(len(rows), dtype=np.intp),
                 np.ones(len(rows), dtype=np.int64), ceilings[rows]),
            first[rows], np.random.default_rng(0))

    together = play(np.arange(n))
    for i in range(n):
        alone = play(np.array([i]))
        assert (together.level[i], together.n_moves[i]) == (alone.level[0], alone.n_moves[0])
    assert len({int(x) for x in together.level}) > 1  # the games do differ


def test_randomness_flows_from_the_seed_and_leaves_python_random_alone():
    def play(seed):
        s = specs.build("genius:AgentK", SELLER, GAME)
        b = specs.build("genius:Yushu", BUYER, GAME)
        return ours(s, b, np.arange(8) % 2, seed=seed)

    random.seed(123)
    before = random.getstate()
    a, b = play(5), play(5)
    assert random.getstate() == before
    np.testing.assert_array_equal(a.actions, b.actions)
    others = [play(seed).actions for seed in (6, 7, 8)]
    assert any(not np.array_equal(a.actions, x) for x in others)


def test_a_new_batch_starts_new_negotiators():
    player = wrapped("negmas", "BoulwareTBNegotiator", SELLER, n=1)
    buyer = wrapped("negmas", "ConcederTBNegotiator", BUYER)
    first = ours(player, buyer, SELLER)
    again = ours(player, buyer, SELLER)  # the same objects, a second batch
    assert (first.level[0], first.n_moves[0]) == (again.level[0], again.n_moves[0])


# --- what the classifier promises for every class it wraps --------------------------------------
def test_classifier_promises_only_what_every_class_keeps():
    for cls in (NegmasNegotiator, GeniusAgent):
        assert cls.classifier["stochastic"] and not cls.classifier["individually_rational"]
        assert not cls.classifier["learns"] and cls.classifier["long_run_time"]
    # a NegMAS class that accepts at a loss ...
    rec = ours(wrapped("negmas", "NiceNegotiator", SELLER), wrapped("negmas", "ToughNegotiator",
                                                                    BUYER), BUYER)
    assert 0 < rec.level[0] < FLOOR  # the Tough Buyer's best price, below the Seller's floor
    # ... and one that draws at random: the protocol's seed changes its moves
    games = [ours(wrapped("negmas", "RandomNegotiator", SELLER, n=1),
                  wrapped("negmas", "LinearTBNegotiator", BUYER), np.arange(6) % 2,
                  seed=seed).actions for seed in (1, 2)]
    assert not np.array_equal(*games)


def test_bare_names_play_their_default_class():
    assert specs.build("negmas", SELLER, GAME).negotiator_class.__name__ == "BoulwareTBNegotiator"
    assert specs.build("genius", BUYER, GAME).negotiator_class.__name__ == "HardHeaded"


# --- bad specs: one line naming the problem and the fix -------------------------------------------
@pytest.mark.parametrize("text, needle", [
    ("negmas:Nope", "unknown class 'Nope' in negmas.sao"),
    ("negmas:Boulware", "did you mean BoulwareTBNegotiator"),
    ("negmas:SAOMechanism", "SAOMechanism is not a negotiator"),
    ("negmas:UtilBasedNegotiator", "cannot play a negotiation built from its name alone"),
    ("negmas:SAOMetaNegotiator", "cannot play a negotiation built from its name alone"),
    ("genius:agentk", "did you mean AgentK"),
    ("genius:SortedOutcomeSpace", "is not a negotiator"),
    ("genius:get_agents", "unknown class 'get_agents'"),
])
def test_bad_specs_are_refused_when_parsed(text, needle):
    with pytest.raises(UsageError, match=needle) as info:
        specs.parse(text, "--seller")
    assert str(info.value).startswith("--seller: ") and "\n" not in str(info.value)


def test_without_the_extra_the_message_names_what_to_install(monkeypatch):
    import importlib

    real = importlib.import_module

    def missing(name, *args, **kwargs):
        if name.startswith(("negmas", "negmas_genius_agents")):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", missing)
    negmas_agents.resolve.cache_clear()
    try:
        for text in ("negmas", "genius:AgentK"):
            with pytest.raises(UsageError, match=r'not installed: pip install -e "\.\[negmas\]"'):
                specs.parse(text, "--buyer")
    finally:
        monkeypatch.undo()
        negmas_agents.resolve.cache_clear()


def test_an_agent_that_cannot_play_a_small_grid_is_refused_before_playing():
    with pytest.raises(UsageError, match=r"SAGA cannot play P=5 .* needs P >= 20"):
        specs.build("genius:SAGA", SELLER, Protocol(5, 5), option="--seller")
    specs.build("genius:SAGA", SELLER, Protocol(21, 3))


@pytest.mark.parametrize("args", [
    ["baseline", "--seller", "negmas:Nope"],
    ["baseline", "--buyer", "genius:NotAnAgent"],
    ["market", "--seller-mix", "negmas:SAOMechanism=1", "--steps", "1"],
    ["tournament", "--strategies", "averaging,genius:Nope"],
])
def test_every_command_refuses_a_bad_spec_in_one_line(args, capsys, tmp_path):
    from market.cli import main

    code = main([*args, "--out" if args[0] != "baseline" else "--seed",
                 str(tmp_path / "out") if args[0] != "baseline" else "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "negmas" in err or "genius" in err


def test_a_misspelt_anac_agent_is_refused_before_anything_heavy_is_imported():
    """The names are read from the package's source: a bad name answers without importing the
    agents (over a second) nor Mesa, in every command that takes one."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("negmas_genius_agents")
    script = """
import sys
from market.cli import main
codes = [main(["tournament", "--genius", "AgentK,HardHeded", "--out", "/nonexistent/t"]),
         main(["baseline", "--seller", "genius:Agentk"])]
print(codes, "negmas_genius_agents" in sys.modules, "mesa" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.stdout.split() == ["[2,", "2]", "False", "False"], out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert "unknown class 'HardHeded' in negmas_genius_agents; did you mean HardHeaded" \
        in lines[0]
    assert "did you mean AgentK?" in lines[1]


def test_a_market_trader_s_utility_holds_its_reservation_as_the_reserved_value():
    """What an ANAC agent is told in the market: 0 at its worst level, 1 at its best, and the
    reserved value of the level at its cost (Seller) or value (Buyer); whether it respects it
    is the agent's own rule (docs/pages/interop.md: Atlas3 does not)."""
    pytest.importorskip("negmas")
    from negmas import make_issue

    from market.game.rules import BUYER, SELLER
    from strategies.negmas_agents import level_ufun

    issues = [make_issue(values=list(range(1, 6)), name="level")]
    seller = level_ufun(SELLER, 5, 5, issues)
    assert seller.reserved_value == 1.0 and seller((2,)) == 0.25
    buyer = level_ufun(BUYER, 5, 2, issues)
    assert buyer.reserved_value == 0.75 and buyer((1,)) == 1.0
