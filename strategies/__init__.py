"""Bargaining strategies, the registry that names them, and the parser of strategy specs.

Each strategy is a small class (see :mod:`strategies.base`) with a ``name``
and a ``classifier``; rule-based ones state only their rule (a target level
and when to accept, :mod:`strategies.rule_based`). The registry
(:mod:`strategies.registry`) finds them, and :mod:`strategies.specs` turns
what a user types (``averaging``, ``qlearning:tables.npz``) into one, so the
command line, the market, the batch runner and the view all say the same.

Strategies see the game only through its vocabulary
(:mod:`market.game.rules`, :mod:`market.game.record`), never the mechanism.
"""

from __future__ import annotations

from strategies.base import Strategy
from strategies.registry import STRATEGIES, discover, get, make, names, register

discover()

__all__ = ["STRATEGIES", "Strategy", "get", "make", "names", "register"]
