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

from market.compiled.jit import njit
from market.game import qtable
from market.game.evaluation import spe
from market.game.rules import Protocol
from market.limits import check_memory
from strategies.base import Classifier, KernelState, table_at
from strategies.compiled import Compiled

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


class SubgamePerfect(Compiled):
    """Plays a subgame-perfect equilibrium (indifferent responders accept) of its game.

    The game has several: a responder offered its zero-surplus price gets 0
    whether it accepts or rejects. This one breaks that tie toward accepting,
    so the first mover asks for everything; self-play learners select another
    (see :func:`market.game.outcome_sets.spe_outcomes`).
    """

    name = "spe"
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
        check_memory(self.market_build_bytes(self.protocol),
                     f"spe's backward induction for P={self.protocol.prices}, "
                     f"T={self.protocol.rounds}", "lower the price levels or the rounds")
        self.table = action_table(self.protocol, self.side)

    @classmethod
    def market_build_bytes(cls, protocol: Protocol) -> int:
        """Its game's backward induction, solved as it is built."""
        return 2 * qtable.n_rows(protocol) * protocol.n_actions * SOLVE_BYTES_PER_CELL

    def prepare(self, protocol: Protocol) -> None:
        """Handed another game than its own, it plays that game's equilibrium."""
        if protocol != self.protocol:
            self.protocol = protocol
            self.table = action_table(protocol, self.side)
            self._bound = None

    def kernel_state(self) -> KernelState:
        """The compiled rule reads the action table."""
        return KernelState(table=np.array(self.table, dtype=np.int64))  # a copy: cached read-only

    @staticmethod
    def decide_rows(side, move, game, rows, table, seat, st, g, rng, out):  # noqa: ANN001, ANN205
        """One table look-up per row: role from who moved first, row from the offer on the
        table and its round (:func:`row1`)."""
        P, T = game
        last, prev, first = table
        fstore, istore, layout, config = st
        for r in rows:
            role = 0 if first[r] == side else 1
            out[r] = istore[table_at(layout, g, role, row1(move, P, last[1 - side, r]))]

    @staticmethod
    def decide_one(turn, is_first, member, st, g, rng):  # noqa: ANN001, ANN205
        """The same look-up for one row (the depth-first loop's)."""
        fstore, istore, layout, config = st
        role = 0 if is_first else 1
        return istore[table_at(layout, g, role, row1(turn.move, turn.prices, turn.offer))]


@njit(cache=True, inline="always")
def row1(move, P, offer):  # noqa: ANN001, ANN201
    """The table row of observation ``(offer, round of move)``: ``qtable.row`` for one row."""
    t = (move - 1) // 2 if move > 0 else 0
    return 1 + t * P + offer - 1 if offer > 0 else 0
