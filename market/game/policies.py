"""What a player plays, as probabilities: the greedy policy of Q-tables, a negotiator's policy
read off its decisions, and the check every evaluation runs on a policy it is given.

Policies are probabilities of shape ``(2, S, A)`` in the document's table
layout (index 0: rows used when the agent moved first, 1: when it moved
second; ``S = qtable.n_rows(protocol)``, ``A = protocol.n_actions``), with mass
on legal actions only; a leading batch axis ``(n, 2, S, A)`` holds ``n`` of
them. :mod:`market.game.evaluation` evaluates them exactly.
"""

from __future__ import annotations

import numpy as np

from market.game import qtable
from market.game.qtable import legal_rows
from market.game.rules import Negotiator, Observation, Protocol


def greedy_policy(tables: np.ndarray, protocol: Protocol) -> np.ndarray:
    """The greedy policy of Q-tables, ties split uniformly among the legal maxima.

    ``tables``: ``(S, A)`` or ``(1, S, A)`` (the document's layout, the same
    rows whatever the role), ``(2, S, A)`` (role-aware), or a batch
    ``(n, R, S, A)``. Returns ``(2, S, A)`` (or ``(n, 2, S, A)``). Splitting
    ties uniformly is what the Q-learner's uniform random tie-breaking does
    in expectation, and each state is visited at most once per negotiation,
    so the split policy has exactly the learner's expected rewards.
    Ties are exact equality, as in :func:`strategies.qlearning.decide_rows`.
    """
    q = np.asarray(tables, dtype=float)
    S, A = qtable.n_rows(protocol), protocol.n_actions
    if q.ndim == 2:
        q = q[None]
    if q.ndim not in (3, 4) or q.shape[-2:] != (S, A) or q.shape[-3] not in (1, 2):
        raise ValueError(
            f"Q-tables must have shape ({S}, {A}), (R, {S}, {A}) or (n, R, {S}, {A}) with R in "
            f"1, 2 for P={protocol.prices}, T={protocol.rounds} (got {np.shape(tables)})"
        )
    legal = legal_rows(protocol)
    qm = np.where(legal, q, -np.inf)
    best = (qm >= qm.max(axis=-1, keepdims=True)) & legal
    count = best.sum(axis=-1, keepdims=True)
    pol = best / np.maximum(count, 1)
    if pol.shape[-3] == 1:
        pol = np.repeat(pol, 2, axis=-3)
    return pol


def not_observation_only(negotiator: Negotiator) -> str:
    """Why ``negotiator``'s moves are not a function of its observation now ('' if they are).

    Read from its classifier: ``memory`` other than ``none`` (its own last
    offer, the opponent's earlier offers) makes its move depend on the path;
    a stochastic strategy has no one action per observation. A frozen
    Q-table (``memory`` ``Q-table``, not learning, no exploration) is a
    function of the observation (its ties aside, which it breaks at random).
    """
    classifier = getattr(negotiator, "classifier", {}) or {}
    name = getattr(negotiator, "name", "") or type(negotiator).__name__
    memory = str(classifier.get("memory", "none"))
    if memory == "Q-table":
        exploring = np.any(np.asarray(getattr(negotiator, "epsilon_start", 0.0)) > 0)
        if getattr(negotiator, "learning", False) or exploring:
            return f"{name!r} (it learns or explores as it plays)"
        return ""
    if not memory.startswith("none"):
        return f"{name!r} (it remembers {memory})"
    if classifier.get("stochastic", False):
        return f"{name!r} (it draws its moves at random)"
    return ""


def policy_of(
    negotiator: Negotiator,
    protocol: Protocol,
    lo: int = 1,
    hi: int | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The ``(2, S, A)`` policy of a strategy whose moves depend only on what it observes now.

    Refused (``ValueError`` saying why) for any other (:func:`not_observation_only`).

    Asks ``negotiator`` (a registered strategy, on its own side) for its
    action in every row of both roles, its acceptable levels being
    ``lo..hi`` (default the whole grid), with no own or earlier offers
    remembered. Exact for strategies whose decision is a function of the
    role, the opponent's offer and the round (the time-dependent ones,
    ``hardliner``, ``spe``, a saved Q-table without ties): it lets the
    evaluator compute a best response to them. Rows a role never reaches
    get the strategy's answer all the same (any legal action serves).
    """
    reason = not_observation_only(negotiator)
    if reason:
        raise ValueError(f"no exact policy over observations for {reason}; a best response "
                         "to it needs the history of the negotiation (search the environment)")
    P, T = protocol.prices, protocol.rounds
    hi = P if hi is None else hi
    rng = np.random.default_rng(0) if rng is None else rng
    S, A = qtable.n_rows(protocol), protocol.n_actions
    pol = np.zeros((2, S, A))
    offers = np.arange(1, P + 1)
    for role in (0, 1):  # 0: it moved first, 1: second
        asks = [(0, slice(0, 1), np.zeros(1, dtype=np.int64))]  # the start row, at move 0
        asks += [(2 * t + 2 - role, qtable.round_rows(protocol, t), offers) for t in range(T)]
        for move, rows, offer in asks:
            n = len(offer)
            zero = np.zeros(n, dtype=np.int64)
            obs = Observation(protocol=protocol, move=move, offer=offer, own=zero,
                              first=np.full(n, role == 0), lo=zero + lo, hi=zero + hi,
                              member=np.zeros(n, dtype=np.intp), prev_offer=zero,
                              negotiation=np.arange(n))
            a = np.asarray(negotiator.act(obs, rng), dtype=np.int64)
            if a.shape != (n,) or not protocol.legal(move)[a].all():
                raise ValueError(f"the strategy played an illegal action at move {move}")
            pol[role, np.arange(S)[rows], a] = 1.0
    return pol


def check_policy(policy: np.ndarray, protocol: Protocol, what: str) -> np.ndarray:
    """A ``(2, S, A)`` or ``(n, 2, S, A)`` policy array, checked to be usable."""
    pol = np.asarray(policy, dtype=float)
    S, A = qtable.n_rows(protocol), protocol.n_actions
    if pol.ndim not in (3, 4) or pol.shape[-3:] != (2, S, A):
        raise ValueError(
            f"{what} must have shape (2, {S}, {A}) or (n, 2, {S}, {A}) for "
            f"P={protocol.prices}, T={protocol.rounds} (got {pol.shape})"
        )
    legal = legal_rows(protocol)
    if np.any(pol < 0) or np.any(pol[..., ~legal] != 0):
        raise ValueError(f"{what}: probabilities must be >= 0 and only on legal actions")
    sums = pol[..., :-1, :].sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-9):
        raise ValueError(f"{what}: each non-terminal row must sum to 1")
    return pol


def as_policy(x: np.ndarray, protocol: Protocol, policies: bool, what: str) -> np.ndarray:
    """``x`` as a policy: checked if it is one (``policies``), else the greedy policy of its
    Q-tables."""
    return check_policy(x, protocol, what) if policies else greedy_policy(x, protocol)


__all__ = ["as_policy", "check_policy", "greedy_policy", "not_observation_only", "policy_of"]
