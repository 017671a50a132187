"""ZIP (Cliff 1997): its margin moves as Cliff's rules say, and it learns in a double auction."""

from __future__ import annotations

import numpy as np
import pytest

from market.game.rules import BUYER, SELLER
from market.sim.model import MarketModel
from strategies.stores import stores
from strategies.zip import BETA, GAMMA, MU, ZeroIntelligencePlus, zip_respond

UP, DOWN, SAME = "raise", "lower", "same"

# Each row: the trader's side, whether it still holds its unit, the event (q, deal, shout
# side), and what its margin does. Limit 10 and margin +-0.2: a Seller asks 12, a Buyer bids 8.
RULES = [
    (SELLER, True, (15, 1, BUYER), UP),     # a deal above its price: raise
    (SELLER, False, (15, 1, SELLER), UP),   # ... whoever shouted, active or not
    (SELLER, True, (11, 1, BUYER), DOWN),   # a bid accepted below its price: lower
    (SELLER, True, (11, 1, SELLER), SAME),  # an ask accepted below: nothing
    (SELLER, True, (11, 0, SELLER), DOWN),  # an ask standing below its price: lower
    (SELLER, False, (11, 0, SELLER), SAME),  # ... but not once it has traded
    (SELLER, True, (11, 0, BUYER), SAME),   # a bid standing below: nothing
    (BUYER, True, (5, 1, SELLER), UP),      # a deal below its price: raise (bid lower)
    (BUYER, True, (9, 1, SELLER), DOWN),    # an ask accepted above: lower (bid higher)
    (BUYER, True, (9, 0, BUYER), DOWN),     # a bid standing above its price: lower
    (BUYER, False, (9, 0, BUYER), SAME),
    (BUYER, True, (9, 0, SELLER), SAME),
    (SELLER, True, (15, 1, -1), UP),        # a call's price: raise
    (SELLER, True, (11, 1, -1), SAME),      # ... but no side to lower on
]


@pytest.mark.parametrize(("side", "active", "event", "expected"), RULES)
def test_the_margin_moves_as_cliffs_rules_say(side, active, event, expected):
    z = ZeroIntelligencePlus(side, 1)
    z.state[0, MU] = 0.2 if side == SELLER else -0.2
    z.state[0, BETA], z.state[0, GAMMA] = 0.3, 0.0
    store, (view,) = stores([z.kernel_state()])
    z.adopt(view)
    zip_respond(side, event, 0, 10.0, active, store.arrays, 0, np.random.default_rng(0))
    margin = abs(z.state[0, MU])  # a Buyer's margin is -mu
    assert {UP: margin > 0.2, DOWN: margin < 0.2, SAME: margin == 0.2}[expected]


def test_zip_prices_converge_where_zero_intelligence_prices_do_not():
    """Cliff and Bruten's point, in this project's double auction: on the same drawn values,
    ZIP traders' prices end nearer the competitive price (Smith's alpha) than ZI-C's
    (measured, 50 + 50 traders, P = 100, 100 steps: alpha about 6% against 18%)."""
    alpha = {}
    for mix in ("zi-c", "zip"):
        runs = []
        for seed in range(3):
            m = MarketModel(institution="cda", seller_mix={mix: 1}, buyer_mix={mix: 1},
                            prices=100, seed=seed)
            for _ in range(100):
                m.step()
            runs.append(m.summary()["alpha"])
        alpha[mix] = np.median(runs)
    assert alpha["zip"] < alpha["zi-c"] / 2


def test_margins_are_drawn_from_the_market_and_learned_in_place():
    m = MarketModel(institution="cda", seller_mix={"zip": 1}, buyer_mix={"zip": 1},
                    n_buyers=20, n_sellers=20, seed=3)
    sellers, buyers = m.market.strategies[SELLER][0], m.market.strategies[BUYER][0]
    before = sellers.state[:, MU].copy()
    assert ((before >= 0.05) & (before <= 0.35)).all() and before.std() > 0
    assert (buyers.state[:, MU] < 0).all()
    for _ in range(5):
        m.step()
    assert not np.array_equal(before, sellers.state[:, MU])  # the engine's updates show here
    assert (sellers.state[:, MU] >= 0).all() and (buyers.state[:, MU] <= 0).all()
