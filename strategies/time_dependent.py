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

from market.game import numeric
from market.game.rules import SELLER, Turn
from strategies._ranges import per_member
from strategies.base import Classifier, KernelState
from strategies.rule_based import RuleBased, extreme_and_reservation


class TimeDependent(RuleBased):
    """Shared rule; the named subclasses differ only in the default ``beta``."""

    default_beta: ClassVar[float] = 1.0
    member_arrays = ("beta",)
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
        """Each member's ``beta`` is its rule's ``turn.param``."""
        return KernelState(params=np.ascontiguousarray(self.beta[:, None]))

    def adopt(self, state: KernelState) -> None:
        """The engine reads its copy of the exponents: use it."""
        self.beta = state.params[:, 0]

    @staticmethod
    def target(turn: Turn, rng: object) -> int:
        """``extreme + alpha(tau) * (reservation - extreme)`` with ``alpha = tau ** (1 / beta)``
        (``beta``: the member's ``turn.param``), rounded toward the mover's own side."""
        extreme, reserve = extreme_and_reservation(turn)
        horizon = max(2 * turn.rounds - 2, 1)
        tau = min(turn.move / horizon, 1.0)
        alpha = numeric.power1(tau, 1.0 / turn.param)
        x = extreme + alpha * (reserve - extreme)
        if turn.side == SELLER:
            return int(np.ceil(x - 1e-9))
        return int(np.floor(x + 1e-9))


class Boulware(TimeDependent):
    """Holds near its extreme and concedes late (``beta = 0.2``)."""

    name = "boulware"
    default_beta = 0.2


class Linear(TimeDependent):
    """Concedes the same amount at every move (``beta = 1``)."""

    name = "linear"
    default_beta = 1.0


class Conceder(TimeDependent):
    """Concedes most of the way early (``beta = 5``)."""

    name = "conceder"
    default_beta = 5.0
