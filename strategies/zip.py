"""Zero Intelligence Plus (ZIP) traders of Cliff (1997): a profit margin that learns from the
market's public events.

Cliff and Bruten showed that zero-intelligence prices need not converge to
the competitive price, and gave ZIP traders the least intelligence that
makes them: each trader quotes its limit price marked up (a Seller) or
down (a Buyer) by its own margin, and moves that margin after every public
event of the book, by a Widrow-Hoff rule with momentum, toward a price just
beyond the last shout.

Here, with prices as levels: a member's limit ``lambda`` is its reservation
level (a Seller's lowest acceptable level, a Buyer's highest) and it quotes
``lambda (1 + mu)`` (rounded toward its own side, inside its range), with
``mu >= 0`` for a Seller and ``-1 <= mu <= 0`` for a Buyer. Cliff's
update rules, on an event ``(q, deal, shout side)`` (:mod:`market.sim.auction`
tells every ZIP trader of every quote that stands and every trade):

=========  ==========================================  ==============================
trader     the last shout was accepted at ``q``        it was not accepted
=========  ==========================================  ==============================
Seller     ``p <= q``: raise the margin; a bid and the   an ask, the Seller active and
           Seller active and ``p >= q``: lower it        ``p >= q``: lower it
Buyer      ``p >= q``: raise the margin; an ask and the  a bid, the Buyer active and
           Buyer active and ``p <= q``: lower it         ``p <= q``: lower it
=========  ==========================================  ==============================

Raising a Seller's margin (lowering a Buyer's) aims at ``tau = (1 + R) q + A``,
the other way at ``tau = (1 - R) q - A`` (``R`` uniform in [0, 0.05], ``A`` in
[0, 0.05] levels, drawn per update); then ``Delta = beta (tau - p)``,
``Gamma = gamma Gamma + (1 - gamma) Delta`` and the new price ``p + Gamma``
sets the margin. Each member draws its margin (a Seller in [0.05, 0.35], a
Buyer in [-0.35, -0.05]), its learning rate ``beta`` in [0.1, 0.5] and its
momentum ``gamma`` in [0, 0.1] when its population is built; with no
generator (the two-agent game) it takes the middles.

A call market's clearing price is heard as an accepted shout of neither
side (only the "raise" rules apply). In bilateral bargaining there is no
public event: ZIP keeps its margins and plays them as a fixed markup.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.compiled.jit import njit
from market.game.rules import BUYER, SELLER, Turn
from strategies.base import Classifier, KernelState, MarketSetting, param_at
from strategies.rule_based import RuleBased, bounds

#: the columns of a member's parameters: margin, momentum term, learning rate, momentum
MU, GAMMA_TERM, BETA, GAMMA = 0, 1, 2, 3
#: where the draws fall (Cliff 1997)
MARGIN = (0.05, 0.35)
RATE = (0.1, 0.5)
MOMENTUM = (0.0, 0.1)
R_MAX = A_MAX = 0.05


@njit(cache=True, inline="always")
def price(limit: float, mu: float) -> float:
    """The price (in levels) a member with this limit and margin quotes."""
    return limit * (1.0 + mu)


@njit(cache=True, inline="always")
def zip_respond(side, event, member, limit, active, st, g, rng):  # noqa: ANN001, ANN201
    """Cliff's update of one member's margin on one public event (the module's table)."""
    q, deal, shout = event
    fstore = st[0]
    layout = st[2]
    at_mu = param_at(layout, g, member, MU)
    mu = fstore[at_mu]
    p = price(limit, mu)
    raise_it = lower_it = False
    if side == SELLER:
        if deal:
            raise_it = p <= q
            lower_it = not raise_it and shout == BUYER and active and p >= q
        else:
            lower_it = shout == SELLER and active and p >= q
    else:
        if deal:
            raise_it = p >= q
            lower_it = not raise_it and shout == SELLER and active and p <= q
        else:
            lower_it = shout == BUYER and active and p <= q
    if not (raise_it or lower_it):
        return
    r, a = R_MAX * rng.random(), A_MAX * rng.random()
    up = raise_it if side == SELLER else lower_it  # toward a higher price
    tau = (1.0 + r) * q + a if up else (1.0 - r) * q - a
    at_term = param_at(layout, g, member, GAMMA_TERM)
    beta = fstore[param_at(layout, g, member, BETA)]
    gamma = fstore[param_at(layout, g, member, GAMMA)]
    term = gamma * fstore[at_term] + (1.0 - gamma) * beta * (tau - p)
    fstore[at_term] = term
    mu = (p + term) / limit - 1.0
    fstore[at_mu] = max(mu, 0.0) if side == SELLER else min(max(mu, -1.0), 0.0)


class ZeroIntelligencePlus(RuleBased):
    """Quotes its limit marked by a margin that learns from the book (Cliff 1997)."""

    name = "zip"
    member_arrays = ("state",)
    classifier = Classifier(
        stochastic=True,
        memory="its margin and momentum, learned from the book's public events",
    )

    def __init__(self, side: int | str = SELLER, n_members: int = 1, *,
                 rng: np.random.Generator | None = None) -> None:
        super().__init__(side, n_members)
        n, sign = self.n_members, (1.0 if self.side == SELLER else -1.0)
        self.state = np.zeros((n, 4))
        if rng is None:
            self.state[:, MU] = sign * sum(MARGIN) / 2
            self.state[:, BETA], self.state[:, GAMMA] = sum(RATE) / 2, sum(MOMENTUM) / 2
        else:
            self.state[:, MU] = sign * rng.uniform(*MARGIN, n)
            self.state[:, BETA] = rng.uniform(*RATE, n)
            self.state[:, GAMMA] = rng.uniform(*MOMENTUM, n)

    @classmethod
    def for_market(cls, side: int, n_members: int, protocol: Any, market: MarketSetting,
                   arg: str | None = None, params: dict[str, Any] | None = None
                   ) -> ZeroIntelligencePlus:
        """Margins, rates and momenta drawn per member from the market's generator."""
        return cls(side, n_members, rng=market.rng)

    def kernel_state(self) -> KernelState:
        """Each member's margin is its rule's ``turn.param``; the rest is its update's."""
        return KernelState(params=np.ascontiguousarray(self.state))

    def adopt(self, state: KernelState) -> None:
        """The engine updates its copy of the margins: use it."""
        self.state = state.params

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """Its limit marked by its margin (``turn.param``), rounded toward its own side,
        inside its range."""
        lo, hi = bounds(turn)
        if turn.side == SELLER:
            k = int(np.ceil(price(lo, turn.param) - 1e-9))
        else:
            k = int(np.floor(price(hi, turn.param) + 1e-9))
        return min(max(k, lo), hi)

    respond = staticmethod(zip_respond)
