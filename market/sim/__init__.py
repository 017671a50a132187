"""The marketplace: a Mesa model in which many Sellers and Buyers pair up and bargain.

:class:`~market.sim.model.MarketModel` owns the schedule (start a period,
pair, negotiate, settle, learn, collect) and delegates the rest: its
parameters are declared and checked in :mod:`~market.sim.params` (one
``check`` for the model, the market command and the batch), who trades in
:mod:`~market.sim.population`, settling and rewards in
:mod:`~market.sim.exchange`, running totals and the figures made of them
in one ledger (:mod:`~market.sim.ledger`, where a new metric is added),
data collection in :mod:`~market.sim.collector`, the last step's
negotiations in :mod:`~market.sim.traces`. Its traders are Mesa agents that
view the model's arrays (:mod:`~market.sim.agents`), each strategy builds
its population for the market itself (its learners are Q-learners adapted to
costs, values and a market clock, :class:`~strategies.qlearning.MarketQLearning`),
and its yardsticks (competitive
equilibrium, efficiency, surplus split) come from :mod:`~market.sim.yardsticks`.
"""
