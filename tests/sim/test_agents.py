"""Sellers and Buyers: Mesa agents that view their side's arrays through a narrow interface."""

from __future__ import annotations

import mesa
import numpy as np
import pytest

from market.game.rules import BUYER, SELLER
from market.sim.agents import Buyer, Seller, TraderArrays
from market.sim.model import MarketModel

MIXED = {"averaging": 0.5, "qlearning": 0.5}



def test_agents_are_mesa_agents_viewing_the_arrays():
    model = MarketModel(n_buyers=7, n_sellers=5, seller_mix=MIXED, seed=3)
    assert isinstance(model, mesa.Model)
    assert len(model.agents) == 12
    assert len(model.agents_by_type[Seller]) == 5 and len(model.agents_by_type[Buyer]) == 7
    for _ in range(4):
        model.step()
    frame = model.market.agents_now().set_index("unique_id")
    for agent in model.agents:
        row = frame.loc[agent.unique_id]
        assert agent.side_name == row["side"] and agent.strategy == row["strategy"]
        assert agent.reservation == row["reservation"] and agent.wallet == row["earnings"]
        assert agent.trades == row["trades"]
    sellers = model.agents_by_type[Seller]
    assert sorted(set(sellers.get("strategy"))) == ["averaging", "qlearning"]
    assert all(s.cost == s.reservation for s in sellers)


def test_common_wallet_pools_earnings_per_team():
    model = MarketModel(n_buyers=12, n_sellers=12, teams=3, common_wallet=True, seed=5)
    for _ in range(10):
        model.step()
    frame = model.market.agents_now()
    pooled = frame.groupby("team")["earnings"].sum()
    for agent in model.agents:
        assert agent.wallet == pytest.approx(pooled[agent.team])
    assert frame["team"].nunique() == 6  # 3 per side
    s = model.summary()
    assert sum(v for k, v in s.items() if k.startswith("earnings.team.")) == pytest.approx(
        s["realised_surplus"]
    )


class _Stall:
    """A stand-in market: two traders' arrays and nothing else of the market's state."""

    common_wallet = True
    names = (["averaging", "zi-c"], ["averaging", "zi-c"])

    def __init__(self) -> None:
        self.books = (TraderArrays(SELLER, np.array([10.0]), np.array([0]), np.array([0]),
                                   np.array([0])),
                      TraderArrays(BUYER, np.array([70.0]), np.array([1]), np.array([0]),
                                   np.array([0])))

    def team_wallets(self) -> np.ndarray:
        return np.bincount(np.concatenate([b.team for b in self.books]),
                           weights=np.concatenate([b.earnings for b in self.books]))


def test_a_trader_reads_any_market_that_offers_the_narrow_interface():
    stall = _Stall()
    model = mesa.Model(seed=0)
    model.market = stall  # type: ignore[attr-defined]
    seller, buyer = Seller(model, 0, 1), Buyer(model, 0, 2)
    stall.books[SELLER].earnings[0] = 15.0
    stall.books[BUYER].earnings[0] = 25.0
    stall.books[BUYER].trades[0] = 1
    assert (seller.cost, buyer.value) == (10.0, 70.0)
    assert (seller.strategy, buyer.strategy) == ("averaging", "zi-c")
    assert seller.wallet == buyer.wallet == 40.0  # one team, one common wallet
    assert buyer.earnings == 25.0 and buyer.trades == 1 and seller.side_name == "seller"
    assert list(model.agents) == [seller, buyer] and buyer.unique_id == 2


def test_a_model_is_freed_when_dropped():
    """Nothing Mesa keeps at class level holds a market (a batch builds thousands of them)."""
    import gc
    import weakref

    from market.sim.model import MarketModel

    model = MarketModel(n_sellers=5, n_buyers=5, seed=1)
    model.step()
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def test_agents_do_not_import_the_model():
    """The model builds agents; agents read a narrow interface, so the import runs one way."""
    import ast
    from pathlib import Path

    import market.sim.agents as agents

    tree = ast.parse(Path(agents.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("market.sim")}
