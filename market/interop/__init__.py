"""Meeting the field: this game inside NegMAS, and as PettingZoo and Gymnasium environments.

- :mod:`market.interop.negmas_adapter`: any registered strategy (a saved
  Q-table included) as a NegMAS ``SAONegotiator`` for a single ordered price
  issue, and a runner of one negotiation in NegMAS's ``SAOMechanism``. (The
  other way round, NegMAS negotiators and ANAC agents as strategies of this
  game, is the strategy family :mod:`strategies.negmas_agents`.)
- :mod:`market.interop.pettingzoo_env`: the two-agent game as a PettingZoo
  AEC environment (agents ``seller`` and ``buyer``).
- :mod:`market.interop.gymnasium_env`: one side of the game as a Gymnasium
  environment, the other side played by any registered strategy.
- :mod:`market.interop.vector_env`: many negotiations of one side as a Gymnasium
  vector environment, rows of one compiled batch (:mod:`market.game.fastgame`,
  also the single environment's path for built-in opponents).

Each module imports its library when it is loaded, so importing this
package needs none of them; they come with the extras ``negmas`` and
``rl`` (``pip install -e ".[negmas,rl]"``). The move-by-move environments step
through the protocol's own :class:`~market.game.protocol.Lockstep`; the compiled
ones through the game's compiled rules (:mod:`market.game.moves`, which the
mechanism plays too) and the strategies' compiled decisions, tested to play
the same games. Every environment takes the game as ``protocol=``
(:class:`~market.game.rules.Protocol`), or as keywords that build one.

Layer 4: imports :mod:`market.game`, :mod:`strategies` and, for the compiled environments,
the compiled two-agent game (:mod:`market.compiled_game`), never the market.
"""
