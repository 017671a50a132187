"""The last step's negotiations: the pairs table and one pair's trace agree."""

from __future__ import annotations

import pytest

from market.sim.model import MarketModel


def test_trace_of_a_pair_matches_the_pairs_table():
    model = MarketModel(n_buyers=10, n_sellers=10, seed=2)
    model.step()
    pairs = model.last_step.frame()
    for i in range(len(pairs)):
        tr = model.last_step.trace(i)
        assert tr.seller.unique_id == pairs["seller_id"][i]
        assert tr.buyer.unique_id == pairs["buyer_id"][i]
        assert (tr.record.deal_level or 0) == pairs["level"][i]
        assert model.last_step.trace_of(tr.buyer).seller is tr.seller
        rows = tr.moves()
        assert rows[0]["action"] == "offer" and len(rows) == tr.record.moves[-1].move + 1
        if tr.price is not None:
            assert tr.price == pairs["price"][i]
    with pytest.raises(ValueError, match="pair"):
        model.last_step.trace(len(pairs))
