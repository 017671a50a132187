"""The marketplace: a Mesa model in which many Sellers and Buyers pair up and bargain.

:class:`~market.sim.model.MarketModel` owns the schedule (pair, negotiate,
settle, collect); its parameters are checked in
:mod:`~market.sim.params`, its running totals kept in one ledger
(:mod:`~market.sim.ledger`), its traders are Mesa agents that view the
model's arrays (:mod:`~market.sim.agents`), its learners are Q-learners
adapted to costs, values and a market clock (:mod:`~market.sim.learners`),
and its yardsticks (competitive equilibrium, efficiency, surplus split)
come from :mod:`~market.sim.metrics`.
"""
