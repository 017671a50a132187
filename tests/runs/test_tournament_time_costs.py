"""The tournament under time costs: payoffs discounted per offer, the plan and its files say so."""

from __future__ import annotations

import json

import cli_run  # tests/support, on pytest's pythonpath
import numpy as np
import pytest

from market.game.pressure import PRESSURE
from market.game.record import two_agent_rewards
from market.game.rules import Protocol
from market.runs.tournament import plan_tournament, play_pairing, run_tournament


def test_rewards_are_the_documents_times_each_sides_factor_per_offer(duel):
    record = duel("averaging", "averaging", n=60, seed=1, seller_range=(2, 5),
                  buyer_range=(1, 4))
    plain = two_agent_rewards(record)
    record.protocol = Protocol(5, 5, 0.8, 0.6)
    s, b = two_agent_rewards(record)
    k = np.maximum(record.n_moves - 2, 0)
    assert (k > 0).any()
    assert np.allclose(s, plain[0] * 0.8 ** k) and np.allclose(b, plain[1] * 0.6 ** k)


def test_time_costs_lower_the_payoffs_of_haggling_and_leave_the_deals_alone():
    plan = plan_tournament(5, 5, "averaging,hardliner", 40, 3, None, None, None, None,
                           quiet=True, discount=(0.7, 0.7))
    assert plan.protocol == Protocol(5, 5, 0.7, 0.7)
    assert plan.cache_name == "qlearning_selfplay_P5_T5_d0.7-0.7.npz"
    costly = run_tournament(plan.entrants(None), plan.protocol, 40, 3)
    plain = run_tournament(plan.entrants(None), Protocol(5, 5), 40, 3)
    assert costly.deal_rate.equals(plain.deal_rate)
    assert (costly.mean_payoff.to_numpy() <= plain.mean_payoff.to_numpy() + 1e-12).all()
    assert (costly.mean_payoff.to_numpy() < plain.mean_payoff.to_numpy()).any()
    assert costly.as_dict()["seller_discount"] == 0.7 and "seller_discount" not in \
        plain.as_dict()


def test_a_pairing_under_factors_of_1_is_the_plain_game_bit_for_bit():
    plan = plan_tournament(5, 5, "averaging", 30, 0, None, None, None, None, quiet=True)
    (e,) = plan.entrants(None)
    a = play_pairing(Protocol(5, 5), e.factory("seller"), e.factory("buyer"), 30,
                     np.random.default_rng(4), (1, 5), (1, 5))
    b = play_pairing(Protocol(5, 5, 1.0, 1.0), e.factory("seller"), e.factory("buyer"), 30,
                     np.random.default_rng(4), (1, 5), (1, 5))
    assert a == b


def test_anac_agents_play_under_time_costs_with_discounted_utility_functions():
    pytest.importorskip("negmas_genius_agents")
    plan = plan_tournament(5, 5, "averaging", 4, 0, None, None, "AgentK", None, quiet=True,
                           discount=(0.9, 0.9))
    res = run_tournament(plan.entrants(None), plan.protocol, 2, 0)
    plain = run_tournament(plan.entrants(None), Protocol(5, 5), 2, 0)
    assert set(res.mean_payoff.index) == {"averaging", "genius:AgentK"}
    assert res.as_dict()["seller_discount"] == 0.9
    assert not res.mean_payoff.equals(plain.mean_payoff)


def test_the_command_refuses_a_bad_factor_in_one_line(tmp_path):
    r = cli_run.run("tournament", "--discount", "2", "--out", str(tmp_path / "t"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--discount" in r.stderr
    assert not (tmp_path / "t").exists()


def test_a_breakdown_risk_ends_some_talks_and_costs_come_off_the_deals():
    plan = plan_tournament(5, 5, "averaging,boulware", 40, 3, None, None, None, None,
                           quiet=True, pressure={"breakdown": 0.3, "seller_cost": 0.02})
    assert plan.protocol == Protocol(5, 5, breakdown=0.3, seller_cost=0.02)
    assert plan.cache_name == "qlearning_selfplay_P5_T5_q0.3_c0.02-0.npz"
    risky = run_tournament(plan.entrants(None), plan.protocol, 40, 3)
    plain = run_tournament(plan.entrants(None), Protocol(5, 5), 40, 3)
    assert (risky.deal_rate.to_numpy() <= plain.deal_rate.to_numpy()).all()
    assert (risky.deal_rate.to_numpy() < plain.deal_rate.to_numpy()).any()
    record = risky.as_dict()
    assert record["breakdown"] == 0.3 and record["seller_cost"] == 0.02
    assert "breakdown" not in plain.as_dict()


def test_rewards_are_less_the_costs_of_the_offers_before_the_deal(duel):
    record = duel("averaging", "averaging", n=60, seed=1, seller_range=(2, 5),
                  buyer_range=(1, 4))
    plain = two_agent_rewards(record)
    record.protocol = Protocol(5, 5, seller_cost=0.05, buyer_cost=0.1)
    s, b = two_agent_rewards(record)
    k = np.maximum(record.n_moves - 2, 0)
    deal = record.level > 0
    assert np.allclose(s[deal], plain[0][deal] - 0.05 * k[deal])
    assert np.allclose(b[deal], plain[1][deal] - 0.1 * k[deal])
    assert (s[~deal] == 0).all() and (b[~deal] == 0).all()  # a failure costs nothing


@pytest.mark.parametrize("flags, game", [
    (["--discount", "0.9"], Protocol(5, 5, 0.9, 0.9)),
    (["--seller-discount", "0.9", "--buyer-discount", "0.8", "--breakdown", "0.1"],
     Protocol(5, 5, 0.9, 0.8, 0.1)),
])
def test_the_command_line_s_discounts_reach_the_game(flags, game, tmp_path, capsys):
    """The command line hands its discounts with the rest of the pressure (they used to be
    passed twice: a TypeError)."""
    from market.cli import main

    assert main(["tournament", "--repetitions", "2", "--strategies", "averaging,boulware",
                 *flags, "--out", str(tmp_path / "t"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for d in PRESSURE:
        assert out.get(d.name, getattr(Protocol(5, 5), d.name)) == getattr(game, d.name), d.name


def test_json_under_a_breakdown_risk_is_valid_json(tmp_path, capsys):
    """A pairing with no deal has no mean level: null, not a bare NaN that JSON readers
    refuse."""
    from market.cli import main

    assert main(["tournament", "--repetitions", "3", "--strategies", "hardliner,averaging",
                 "--breakdown", "0.9", "--out", str(tmp_path / "t"), "--json"]) == 0
    text = capsys.readouterr().out

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    json.loads(text, parse_constant=refuse)
