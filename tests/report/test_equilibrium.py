"""Breaking the learner's ties another way, as the equilibrium section does."""

from __future__ import annotations

import numpy as np
import pytest

from market.game import evaluation, qtable
from market.game.rules import Protocol
from market.report.equilibrium import _outcome_level, tie_policy


def test_ties_with_accept_are_broken_as_asked_and_nothing_else_moves():
    protocol = Protocol(3, 2)
    tables = np.zeros((1, 2, qtable.n_rows(protocol), protocol.n_actions))
    tables[0, :, qtable.round_rows(protocol, 0), 0] = 1.0  # a clear best offer in round 0
    split = tie_policy(tables, protocol, "split")
    last = qtable.round_rows(protocol, 1)  # accept or reject only, both 0: a tie
    assert split[0, :, last, 3:] == pytest.approx(np.full((2, 3, 2), 0.5))
    acc, rej = tie_policy(tables, protocol, "accept"), tie_policy(tables, protocol, "reject")
    assert (acc[0, :, last, 3] == 1).all() and (rej[0, :, last, 4] == 1).all()
    for pol in (acc, rej):  # rows without a tie involving accept are left as they were
        assert pol[0, :, :1] == pytest.approx(split[0, :, :1])  # start row: offers only
        assert pol[0, :, qtable.round_rows(protocol, 0)] == pytest.approx(
            split[0, :, qtable.round_rows(protocol, 0)])
        evaluation.nash_conv(pol, pol, protocol, policies=True)  # a valid policy


def test_outcome_levels_tell_sure_deals_from_lotteries():
    out = np.array([[[0.8, 0.2, 1.0], [0.4, 0.3, 0.5]], [[0.0, 0.0, 0.0], [0.2, 0.8, 1.0]]])
    np.testing.assert_array_equal(_outcome_level(out, 5), [[4.0, np.nan], [0.0, 1.0]])
