"""A subgame-perfect equilibrium of the two-agent game (indifferent responders accept).

A yardstick rather than a trader: it plays the pure equilibrium that
:func:`market.game.evaluation.spe` finds by backward induction, so a learner can be
measured against it and ``spe`` against ``spe`` has NashConv 0. Its objective
is the document's two-agent reward only (Seller ``p / P``, Buyer
``1 - p / P``); it ignores the reservation range ``lo``/``hi`` it is given. It
is individually rational only in that two-agent sense (no deal it makes
pays less than walking away, 0); in a market with costs and values it can
agree to a price outside its range, hence ``individually_rational: False``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from market.game import qtable
from market.game.evaluation import spe
from market.game.jit import njit
from market.game.rules import Observation, Protocol
from market.limits import check_memory
from strategies.base import Classifier, KernelState, Strategy, table_at

#: peak bytes of :func:`market.game.evaluation.spe` per policy cell (2 roles x rows x actions):
#: measured 67 at P = 101 and 201, T = 20 (tracemalloc), so P = 1,001, T = 100 needs 13 GB
SOLVE_BYTES_PER_CELL = 70


@lru_cache(maxsize=64)
def action_table(protocol: Protocol, side: int) -> np.ndarray:
    """``(2, S)`` action index per (role, document-layout row) of ``side``'s SPE policy.

    Role 0: the agent moved first, 1: it moved second. Computed once per
    protocol (and cached); read-only.
    """
    policy = spe(protocol)[side]
    table = policy.argmax(axis=-1)
    table.setflags(write=False)
    return table


class SubgamePerfect(Strategy):
    """Plays a subgame-perfect equilibrium (indifferent responders accept) of its game.

    The game has several: a responder offered its zero-surplus price gets 0
    whether it accepts or rejects. This one breaks that tie toward accepting,
    so the first mover asks for everything; self-play learners select another
    (see :func:`market.game.evaluation.spe_outcomes`).
    """

    name = "spe"
    compiled = True
    classifier = Classifier(
        individually_rational=False,  # only in the two-agent sense: see module docstring
        objective="two-agent rewards",
    )
    needs_protocol = True

    def __init__(
        self, side: int | str = 0, n_members: int = 1, *, protocol: Protocol | None = None
    ) -> None:
        super().__init__(side, n_members)
        self.protocol = protocol or Protocol()
        cells = 2 * qtable.n_rows(self.protocol) * self.protocol.n_actions
        check_memory(cells * SOLVE_BYTES_PER_CELL,
                     f"spe's backward induction for P={self.protocol.prices}, "
                     f"T={self.protocol.rounds}", "lower the price levels or the rounds")
        self.table = action_table(self.protocol, self.side)

    def kernel_state(self) -> KernelState:
        """The engine reads the action table."""
        return KernelState(table=np.array(self.table, dtype=np.int64))  # a copy: cached read-only

    def act(self, obs: Observation, rng: np.random.Generator) -> np.ndarray:
        """One table look-up per row: role from ``obs.first``, row from ``(offer, t)``."""
        protocol = obs.protocol
        table = self.table if protocol == self.protocol else action_table(protocol, self.side)
        state = qtable.row(protocol, obs.offer, max(obs.t, 0))
        role = np.where(obs.first, 0, 1)
        return table[role, state]


@njit(cache=True, inline="always")
def row1(move, P, offer):  # noqa: ANN001, ANN201
    """The table row of observation ``(offer, round of move)``: ``qtable.row`` for one row."""
    t = (move - 1) // 2 if move > 0 else 0
    return 1 + t * P + offer - 1 if offer > 0 else 0


@njit(cache=True, inline="always")
def decide_rows(side, move, P, rows, last, first, istore, layout, g, out):  # noqa: ANN001, ANN201
    """:meth:`SubgamePerfect.act` for the negotiations ``rows`` (the compiled engine's).

    ``last``: each side's last offer per negotiation; ``first``: the side that
    moved first; the action table is population ``g``'s in the integer store.
    """
    for r in rows:
        row = row1(move, P, last[1 - side, r])
        out[r] = istore[table_at(layout, g, 0 if first[r] == side else 1, row)]
