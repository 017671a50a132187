"""How often two single runs differ as much as the document's did."""

from __future__ import annotations

import numpy as np
import pytest

from market.report.bias import _single_pair_share


def test_single_pair_share_counts_pairs_at_least_that_far_apart():
    assert _single_pair_share(np.array([300.0]), np.array([0.0, 100.0, 200.0]), 165) == (
        pytest.approx(2 / 3))
    assert _single_pair_share(np.array([0.0, 165.0]), np.array([0.0]), 165) == 0.5
