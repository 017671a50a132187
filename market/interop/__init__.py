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

Each module imports its library when it is loaded, so importing this
package needs none of them; they come with the extras ``negmas`` and
``rl`` (``pip install -e ".[negmas,rl]"``). The environments step through the
protocol's own :class:`~market.game.protocol.Lockstep`, so the rules of a
move are the protocol's, not a second copy.

Layer 4: imports :mod:`market.game` and :mod:`strategies` only.
"""
