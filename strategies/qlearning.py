"""Tabular Q-learning with the document's states, actions and Bellman update.

The table layout and the choice and update rules live in
:mod:`market.game.qtable`. A population of learners keeps its tables
stacked as ``(n_members, R, S, A)``: ``R = 1`` is the document's layout (one
table whatever the role), ``R = 2`` the role-aware layout (index 0: rows
used when the agent moved first, 1: when it moved second), which is what
lets a learner tell the two subgames that share an observation apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from market.compiled import jit
from market.compiled.jit import njit
from market.game import numeric, qtable
from market.game.moves import legal_block
from market.game.rules import SIDE_NAMES, Protocol
from market.game.table_files import load_tables
from strategies.base import (
    CLOCK_PARTS,
    Classifier,
    KernelState,
    MarketSetting,
    param_at,
    played_at,
    q_at,
    wait_at,
)
from strategies.compiled import Compiled


# --- the learner's decision and update: its one definition, compiled --------------------------
# Population ``g``'s arrays are read from the flat stores (``fstore``: rates, tables, wait
# values; ``istore``: counts) through the layout (strategies.base). ``config[g]``: learning,
# market (candidates per row, clock slots), rational, buckets, roles, clock parts
# (CLOCK_PARTS' index: 0 both, 1 the state alone, 2 the value of waiting alone), loyalty
# slots (2: the pair's loyalty is part of the state; 1: it is not)
# (:meth:`QLearning.kernel_state`, and the market learner's). Arguments as in
# :mod:`market.game.dispatch`. Every path runs these: the market engine, the lockstep path and
# the two-agent game (through ``act``/``learn``), the environments.
@njit(cache=True, inline="always")
def _slot(config, g, role, time_left, loyal):  # noqa: ANN001, ANN202
    """:meth:`QLearning.slots` (and the market learner's clock and loyalty slots) for one
    row: ``(role * buckets + bucket) * loyalty_slots + loyal``."""
    market, buckets, roles = config[g, 1], config[g, 3], config[g, 4]
    r = role if roles == 2 else 0
    if market == 0:
        return r
    b = 0
    if buckets > 1 and time_left >= 0 and config[g, 5] != 2:
        b = min(max(time_left, 1), buckets) - 1
    if config[g, 6] == 2:
        return (r * buckets + b) * 2 + (1 if loyal > 0 else 0)
    return r * buckets + b


@njit(cache=True, inline="always")
def _candidates(config, g, side, move, P, T, offer, lo, hi):  # noqa: ANN001, ANN202
    """:meth:`QLearning.candidates` (or the rational market learner's) for one row, as
    ``(c0, c1, accept, reject)``: offers ``c0 .. c1-1``, and whether accept and reject are in."""
    a0, a1 = legal_block(move, P, T)
    c0, c1 = a0, min(a1, P)
    accept = a0 <= P < a1
    reject = a0 <= P + 1 < a1
    if config[g, 1] == 1 and config[g, 2] == 1:
        c0, c1 = max(c0, lo - 1), min(c1, hi)
        if side == 0:
            accept = accept and offer >= lo and offer > 0
        else:
            accept = accept and offer <= hi and offer > 0
    return c0, max(c1, c0), accept, reject


@njit(cache=True, inline="always")
def _nth(c0, c1, accept, P, k):  # noqa: ANN001, ANN202
    """The ``k``-th candidate in increasing action order."""
    if k < c1 - c0:
        return c0 + k
    k -= c1 - c0
    if accept:
        if k == 0:
            return P
        k -= 1
    return P + 1


#: how many negotiations ahead a learner's decision asks for the table row it will read
AHEAD = 8
#: an explorer's mark in the actions until it draws its action (no action is negative but
#: -1, which an unreadable table row gives, and the loops refuse)
EXPLORES = -2


@njit(cache=True, inline="always")
def _row_at(layout, config, g, t, P, m, is_first, time_left, loyal, offer):  # noqa: ANN001, ANN202
    """Where in the float store the row a mover sees in round ``t`` begins: member ``m``'s
    table, the slot of its role (and clock, and loyalty), the row of ``offer`` (0: none
    yet)."""
    state = 1 + t * P + offer - 1 if offer > 0 else 0
    return q_at(layout, g, m, _slot(config, g, 0 if is_first else 1, time_left, loyal),
                state, 0)


@njit(cache=True, inline="always")
def decide_rows(side, move, game, rows, table, seat, st, g, rng, out):  # noqa: ANN001, ANN201
    """Epsilon-greedy actions for the negotiations ``rows`` into ``out``.

    Greedy first, row by row among the candidates (the legal actions, or the
    rational ones in a market), a tie drawing one uniform that picks the
    ``floor(u * count)``-th tied action in increasing order
    ; then one uniform per row decides
    who explores (``u < epsilon``, epsilon from the member's schedule and the
    negotiations it has played); explorers draw a random candidate: with one
    legal block for all rows (the two-agent game) one ``integers`` draw for
    all of them, else one uniform each.
    """
    P, T = game
    last, prev, first = table
    lo, hi, member, time_left, loyal, _ = seat
    fstore, istore, layout, config = st
    A = P + 2
    t = (move - 1) // 2 if move > 0 else 0
    n = rows.size
    # greedy among the candidates; a tie draws one uniform. The row AHEAD negotiations on is
    # asked for first (jit.prefetch): at scale each row is a cache miss, and this hides it
    for i in range(-AHEAD, n):
        if i + AHEAD < n:
            a = rows[i + AHEAD]
            jit.prefetch(fstore, _row_at(layout, config, g, t, P, member[a], first[a] == side,
                                         time_left[a], loyal[a], last[1 - side, a]))
        if i < 0:
            continue
        r = rows[i]
        offer = last[1 - side, r]
        c0, c1, accept, reject = _candidates(config, g, side, move, P, T, offer, lo[r], hi[r])
        base = _row_at(layout, config, g, t, P, member[r], first[r] == side, time_left[r],
                       loyal[r], offer)
        best, count, arg = qtable.greedy_ties(fstore, base, c0, c1, accept, reject, P)
        if best == -np.inf:  # nothing to choose from: every action ties
            out[r] = qtable.pick(rng.random(), A)
            continue
        if count > 1:
            arg = qtable.nth_tie(fstore, base, c0, c1, accept, P, best, arg,
                                 qtable.pick(rng.random(), count))
        out[r] = arg
    # exploration: one uniform per row, then the explorers' random candidate. An explorer is
    # marked in ``out`` until it draws (no array of flags: one allocation per call, a fifth of
    # a small market's step allocations); a greedy action is never EXPLORES
    explorers = 0
    for i in range(rows.size):
        m = member[rows[i]]
        eps = 0.0
        if config[g, 0] == 1:
            start, end = fstore[param_at(layout, g, m, 2)], fstore[param_at(layout, g, m, 3)]
            decay = fstore[param_at(layout, g, m, 4)]
            played = float(istore[played_at(layout, g, m)])
            eps = end + (start - end) * numeric.exp1(-decay * played)
        if rng.random() < eps:
            out[rows[i]] = EXPLORES
            explorers += 1
    if explorers == 0:
        return
    a0, a1 = legal_block(move, P, T)
    if config[g, 1] == 0:  # one legal block for all: uniform indices into it, in one draw
        picks = rng.integers(0, a1 - a0, explorers)
        j = 0
        for i in range(rows.size):
            if out[rows[i]] == EXPLORES:
                out[rows[i]] = a0 + picks[j]
                j += 1
        return
    for i in range(rows.size):  # a candidate set per row: one uniform each (random_legal)
        r = rows[i]
        if out[r] == EXPLORES:
            c0, c1, accept, reject = _candidates(config, g, side, move, P, T, last[1 - side, r],
                                                 lo[r], hi[r])
            count = (c1 - c0) + accept + reject
            out[r] = _nth(c0, c1, accept, P, qtable.pick(rng.random(), count)) if count > 0 else 0


@njit(cache=True, inline="always")
def learn_rows(side, game, rows, record, member, reward, time_left, loyal, st, g):  # noqa: ANN001, ANN201
    """The Bellman update along this side's moves of each finished negotiation ``rows[i]``
    (``member[i]``, ``reward[i]``, ``time_left[i]``, -1: no clock, ``loyal[i]``), in move
    order.

    A move's target is the reward if the negotiation ended before the
    mover's next move, else ``gamma`` times the value (max over legal
    actions) of the row it saw at its next move. With the market clock the
    member's wait value of its time-left bucket learns what the negotiation
    earned, and a failure is worth waiting (the discounted wait value of the
    next step's bucket) instead of 0 (:class:`MarketQLearning`).
    """
    P, T = game
    actions, first, n_moves, level = record
    fstore, istore, layout, config = st
    if config[g, 0] == 0 or rows.size == 0:
        return
    buckets = config[g, 3]
    for i in range(rows.size):
        r, m = rows[i], member[i]
        lr, gamma = fstore[param_at(layout, g, m, 0)], fstore[param_at(layout, g, m, 1)]
        outcome = reward[i]
        tl = time_left[i]
        if config[g, 1] == 1 and buckets > 1 and tl >= 0:
            b = wait_at(layout, g, m, min(max(tl, 1), buckets) - 1)
            later = wait_at(layout, g, m, min(max(tl - 1, 1), buckets) - 1)
            cont = gamma * fstore[later] if tl > 1 else 0.0
            if level[r] <= 0 and config[g, 5] != 1:
                outcome = cont
            fstore[b] += lr * (outcome - fstore[b])
        is_first = first[r] == side
        base = q_at(layout, g, m, _slot(config, g, 0 if is_first else 1, tl, loyal[i]), 0, 0)
        A = P + 2
        mv = 0 if is_first else 1
        nm = n_moves[r]
        while mv < nm:
            prev = actions[r, max(mv - 1, 0)]
            cell = base + (0 if mv == 0 else 1 + ((mv - 1) // 2) * P + prev) * A + actions[r, mv]
            nxt = mv + 2
            if nxt < nm:
                seen = actions[r, min(nxt - 1, 2 * T - 1)]
                row = base + (1 + ((nxt - 1) // 2) * P + seen) * A
                a0, a1 = legal_block(nxt, P, T)
                v = qtable.row_max(fstore, row, a0, a1)
                fstore[cell] = qtable.bellman_update1(fstore[cell], 0.0, v, lr, gamma)
            else:
                fstore[cell] = qtable.bellman_update1(fstore[cell], outcome, 0.0, lr, gamma)
            mv += 2
        istore[played_at(layout, g, m)] += 1


class QLearning(Compiled):
    """Epsilon-greedy tabular Q-learner; learns online when ``learning`` is on.

    Parameters (scalars, or arrays of length ``n_members`` for populations
    whose learning parameters differ per agent): ``lr``, ``gamma``,
    ``epsilon_start``, ``epsilon_end``, ``epsilon_decay`` (per negotiation the
    member has played), ``role_aware`` (table layout), ``learning``, and
    ``tables`` to start from (shape ``(S, A)``, ``(R, S, A)`` or
    ``(n_members, R, S, A)``).
    """

    name = "qlearning"
    plays_trained_tables = True
    classifier = Classifier(
        learns=True,
        stochastic=True,
        individually_rational=False,
        memory="Q-table",
    )
    needs_protocol = True
    argument = "FILE.npz"
    member_arrays = ("tables", "played", "lr", "gamma", "epsilon_start", "epsilon_end",
                     "epsilon_decay")
    decide_rows = staticmethod(decide_rows)
    learn_rows = staticmethod(learn_rows)

    def __init__(
        self,
        side: int | str = 0,
        n_members: int = 1,
        *,
        protocol: Protocol | None = None,
        tables: np.ndarray | None = None,
        role_aware: bool = True,
        learning: bool = True,
        lr: Any = 0.1,
        gamma: Any = 0.99,
        epsilon_start: Any = 0.0,
        epsilon_end: Any = 0.0,
        epsilon_decay: Any = 0.0,
    ) -> None:
        super().__init__(side, n_members)
        self.protocol = protocol or Protocol()
        S, A = qtable.n_rows(self.protocol), self.protocol.n_actions
        if tables is None:
            R = 2 if role_aware else 1
            tables = np.zeros((self.n_members, R, S, A))
        else:
            tables = np.asarray(tables, dtype=float)
            if tables.ndim == 2:
                tables = tables[None]
            if tables.ndim == 3:
                tables = np.broadcast_to(tables, (self.n_members, *tables.shape)).copy()
            if tables.ndim != 4 or tables.shape[0] != self.n_members or tables.shape[2:] != (S, A):
                raise ValueError(
                    f"Q-tables must have shape (R, {S}, {A}) for P={self.protocol.prices}, "
                    f"T={self.protocol.rounds} (got {tables.shape[-3:]})"
                )
            if tables.shape[1] not in (1, 2):
                raise ValueError(f"Q-tables need 1 or 2 roles (got {tables.shape[1]})")
        self.tables = np.ascontiguousarray(tables, dtype=float)
        self.learning = bool(learning)
        self.lr, self.gamma = self._per_member(lr), self._per_member(gamma)
        self.epsilon_start = self._per_member(epsilon_start)
        self.epsilon_end = self._per_member(epsilon_end)
        self.epsilon_decay = self._per_member(epsilon_decay)
        self.played = np.zeros(self.n_members, dtype=np.int64)
        self.params = {"role_aware": self.tables.shape[1] == 2, "learning": self.learning}

    def _per_member(self, x: Any) -> np.ndarray:
        """A rate for every member: one for all, or one each (a fresh array either way)."""
        a = np.asarray(x, dtype=float)
        if a.ndim == 0:
            return np.full(self.n_members, float(a))
        return np.broadcast_to(a, (self.n_members,)).copy()

    @classmethod
    def spec_params(cls, arg: str, side: int | str, protocol: Protocol) -> dict[str, Any]:
        """``qlearning:FILE.npz``: the side's saved table, checked against the game, played
        greedily (learning off)."""
        pair = load_tables(arg, protocol)
        name = side if isinstance(side, str) else SIDE_NAMES[side]
        return {"tables": getattr(pair, name), "learning": False}

    @classmethod
    def for_market(cls, side: int, n_members: int, protocol: Protocol, market: MarketSetting,
                   arg: str | None = None, params: dict[str, Any] | None = None) -> QLearning:
        """Market learners: the market's learning parameters (fixed or drawn per member,
        :func:`default_learner_params`, :func:`drawn_learner_params`), a saved table to start
        from, and :class:`MarketQLearning` when they must stay rational or see the clock."""
        rng = market.rng if market.rng is not None else np.random.default_rng()
        base = (drawn_learner_params(n_members, rng) if market.learner_params == "drawn"
                else default_learner_params(side))
        base.update(params or {})
        if arg:
            base.setdefault("tables", cls.spec_params(arg, side, protocol)["tables"])
        if not market.rational and market.clock_buckets <= 1 and not market.loyal_state:
            return cls(side, n_members, protocol=protocol, **base)
        return MarketQLearning(side, n_members, protocol=protocol, rational=market.rational,
                               buckets=market.clock_buckets, clock_parts=market.clock_parts,
                               loyal_state=market.loyal_state, **base)

    @classmethod
    def market_table_cells(cls, protocol: Protocol, market: MarketSetting) -> int:
        """Two roles, one slot per clock bucket (two per bucket with the pair's loyalty in
        the state), every row and action."""
        slots = 2 * market.clock_buckets * (2 if market.loyal_state else 1)
        return slots * qtable.n_rows(protocol) * protocol.n_actions

    @classmethod
    def market_tables_written(cls, market: MarketSetting) -> bool:
        """Whether its fresh tables are written before the engine gathers them (so two copies
        live at once): the clock's and loyalty's slots are made by repeating the tables."""
        return market.clock_buckets > 1 or market.loyal_state

    @classmethod
    def spec_game(cls, arg: str) -> Protocol:
        """A saved table fixes P and T."""
        return load_tables(arg).protocol

    @property
    def role_aware(self) -> bool:
        return self.tables.shape[1] == 2

    def kernel_state(self) -> KernelState:
        """Rates per member, the tables and counts themselves (the engine learns in place)."""
        rates = np.stack([self.lr, self.gamma, self.epsilon_start, self.epsilon_end,
                          self.epsilon_decay], axis=1)
        config = np.zeros(8, dtype=np.int64)
        config[:5] = (self.learning, False, False, 1, 2 if self.role_aware else 1)
        return KernelState(params=rates, tables=self.tables, played=self.played, config=config)

    def adopt(self, state: KernelState) -> None:
        """The engine learns into its copies of the tables and counts, and reads its copies
        of the rates: use them (a trader seated in the population writes into them)."""
        self.tables, self.played = state.tables, state.played
        (self.lr, self.gamma, self.epsilon_start, self.epsilon_end,
         self.epsilon_decay) = (state.params[:, j] for j in range(5))





# --- the market's learner -----------------------------------------------------------------
class MarketQLearning(QLearning):
    """A population of online Q-learners for the market.

    Q-learning as a market trader plays it: within its means, and aware of the clock.

    The registered :class:`~strategies.qlearning.QLearning` is the document's
    learner for the two-agent game, where the price levels *are* the payoffs and
    every deal pays both sides something. In a market a trader has a cost or a
    value, and a table indexed by ``(offer, round)`` alone cannot see it; an
    exploring learner would happily sell below cost and teach itself only
    through losses. This class keeps the same tables, update and
    exploration, and adds two things:

    - ``rational`` (default on): only individually rational actions are
      candidates (offers within the trader's acceptable levels, accept only an
      acceptable offer), so no trader ever loses money and allocative
      efficiency stays within ``[0, 1]``;
    - the market clock (``buckets > 1``): the tables get one slot per
      time-left bucket (the last ``buckets - 1`` steps of the period each have
      their own, earlier steps share one), and walking away without a deal is
      worth the discounted value of trying again next step (a running estimate
      per member and bucket, learned from what negotiations begun with that
      much time left eventually earned) instead of 0. At the last step of a
      period a failed negotiation is worth nothing, so delay costs.
      ``clock_parts`` keeps one of the two: ``"state"`` the slots with
      failures worth 0, ``"wait"`` the value of waiting in one slot (its
      tables keep the slots' shape; only the first is used);
    - the pair's loyalty (``loyal_state``, under partner choice): each slot
      is two, one for Buyers loyal to this Seller and one for the others
      (:func:`market.sim.partners.loyal_rows`), so a Seller may learn to
      treat loyal customers differently (Kirman and Vriend 2001) and a Buyer
      to bargain differently with her own Seller.
    """

    member_arrays = (*QLearning.member_arrays, "wait_value")

    def __init__(
        self,
        side: int | str = 0,
        n_members: int = 1,
        *,
        protocol: Protocol | None = None,
        rational: bool = True,
        buckets: int = 1,
        clock_parts: str = "both",
        loyal_state: bool = False,
        **params: Any,
    ) -> None:
        super().__init__(side, n_members, protocol=protocol, **params)
        if int(buckets) < 1:
            raise ValueError(f"buckets must be >= 1 (got {buckets})")
        if clock_parts not in CLOCK_PARTS:
            raise ValueError(f"clock_parts must be one of {CLOCK_PARTS} (got {clock_parts!r})")
        self.clock_parts = clock_parts
        self.rational = bool(rational)
        self.buckets = int(buckets)
        self._roles_n = self.tables.shape[1]
        self.loyal_state = bool(loyal_state)
        if self.buckets > 1:  # one slot per (role, time-left bucket)
            self.tables = np.repeat(self.tables, self.buckets, axis=1)
        if self.loyal_state:  # ... and per the pair's loyalty: (role, bucket, loyal)
            self.tables = np.repeat(self.tables, 2, axis=1)
        self.wait_value = np.zeros((self.n_members, self.buckets))
        self.params.update(rational=self.rational, buckets=self.buckets)
        if self.loyal_state:  # recorded only where it is on
            self.params.update(loyal_state=True)

    @property
    def role_aware(self) -> bool:
        return self._roles_n == 2

    def kernel_state(self) -> KernelState:
        """The two-agent learner's arrays, with the clock's slots and the wait values."""
        state = super().kernel_state()
        state.config[1:4] = (True, self.rational, self.buckets)
        state.config[5] = CLOCK_PARTS.index(self.clock_parts)
        state.config[6] = 2 if self.loyal_state else 1
        state.wait = self.wait_value
        return state

    def adopt(self, state: KernelState) -> None:
        super().adopt(state)
        self.wait_value = state.wait


def default_learner_params(side: int) -> dict[str, Any]:
    """The market's default for ``"qlearning"``: online from zero tables, some exploration.

    Exploration starts at 0.3 and decays toward 0.02 with each negotiation
    the member plays (``exp(-0.02 n)``: near the floor after ~200
    negotiations); learning rate 0.1, discount 0.95. ``side`` is accepted so
    that the defaults may differ per side one day; they do not now.
    """
    del side
    return dict(lr=0.1, gamma=0.95, epsilon_start=0.3, epsilon_end=0.02, epsilon_decay=0.02)


def drawn_learner_params(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Learning parameters drawn per agent (the document's "different learning parameters")."""
    return dict(
        lr=rng.uniform(0.02, 0.3, n),
        gamma=rng.uniform(0.8, 0.99, n),
        epsilon_start=rng.uniform(0.05, 0.5, n),
        epsilon_end=rng.uniform(0.0, 0.05, n),
        epsilon_decay=rng.uniform(0.005, 0.1, n),
    )
