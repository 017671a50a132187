"""Time-dependent tactics of Faratin, Sierra & Jennings (1998): Boulware, linear, conceder.

The mover's target level slides from its own extreme (Seller: top of its
range, Buyer: bottom) to its reservation level as the negotiation's clock
runs out: ``target = extreme + alpha(tau) * (reservation - extreme)`` with
``alpha(tau) = tau ** (1 / beta)`` and ``tau = move / (2T - 2)``, the share
of the moves at which offers can still be made (move ``2T - 2`` is the last
one). ``beta < 1`` holds out until late (Boulware), ``beta = 1`` concedes at
a constant rate, ``beta > 1`` concedes early (conceder). Levels round toward
the mover's own side, so the target never leaves its range.

Both sides use the same clock, as in Faratin et al., where the deadline is
shared: the first mover reaches its reservation at its last offer, the
second mover one move before the end.

Acceptance: an offer at least as good as the level it would offer now and
inside its range; at the final decision, exactly the offers inside its range.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from market.game import jit
from market.game.jit import njit
from market.game.rules import SELLER, Observation
from strategies._ranges import extreme_and_reservation, offer_bounds1, per_member
from strategies.base import Classifier, KernelState
from strategies.rule_based import RuleBased


class TimeDependent(RuleBased):
    """Shared rule; the named subclasses differ only in the default ``beta``."""

    default_beta: ClassVar[float] = 1.0
    classifier = Classifier(
        memory="none (the clock and its own range)",
    )

    def __init__(
        self, side: int | str = SELLER, n_members: int = 1, *, beta: Any = None
    ) -> None:
        super().__init__(side, n_members)
        value = self.default_beta if beta is None else beta
        #: concession exponent per member (populations may mix temperaments)
        self.beta = per_member(value, self.n_members, "beta")
        self.params = {"beta": value}

    def kernel_state(self) -> KernelState:
        """The engine reads each member's ``beta``."""
        return KernelState(params=np.ascontiguousarray(self.beta[:, None]))

    def target(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """The level this mover would offer at ``obs.move``."""
        extreme, reserve = extreme_and_reservation(self.side, obs)
        horizon = max(2 * obs.protocol.rounds - 2, 1)
        tau = min(obs.move / horizon, 1.0)
        alpha = jit.power(tau, 1.0 / self.beta[obs.member])  # the compiled engine's own power
        x = extreme + alpha * (reserve - extreme)
        if self.side == SELLER:
            return np.ceil(x - 1e-9).astype(np.int64)
        return np.floor(x + 1e-9).astype(np.int64)


@njit(cache=True, inline="always")
def target1(side, move, P, T, offer, own, prev, lo, hi, param, rng):  # noqa: ANN001, ANN201
    """:meth:`TimeDependent.target` for one row; ``param`` is the member's ``beta``."""
    lo, hi = offer_bounds1(side, lo, hi, P)
    extreme, reserve = (hi, lo) if side == SELLER else (lo, hi)
    horizon = max(2 * T - 2, 1)
    tau = min(move / horizon, 1.0)
    alpha = jit.power1(tau, 1.0 / param)
    x = extreme + alpha * (reserve - extreme)
    if side == SELLER:
        return int(np.ceil(x - 1e-9))
    return int(np.floor(x + 1e-9))


class Boulware(TimeDependent):
    """Holds near its extreme and concedes late (``beta = 0.2``)."""

    name = "boulware"
    compiled = True
    default_beta = 0.2


class Linear(TimeDependent):
    """Concedes the same amount at every move (``beta = 1``)."""

    name = "linear"
    compiled = True
    default_beta = 1.0


class Conceder(TimeDependent):
    """Concedes most of the way early (``beta = 5``)."""

    name = "conceder"
    compiled = True
    default_beta = 5.0
