"""The two-agent game: one Seller and one Buyer bargaining by alternating offers.

Its vocabulary (:mod:`~market.game.rules`: sides, sizes, legal actions,
observations, rewards) is all a strategy needs to know; the mechanism
(:mod:`~market.game.protocol`) runs many negotiations in lockstep on arrays
and writes the negotiation record (:mod:`~market.game.record`). Around them:
the price grid that maps levels to money, the document's Q-table layout and
its ``.npz`` files, exact evaluation by backward induction (values, best
responses, NashConv, subgame perfection, a subgame-perfect equilibrium), training of
Q-learners (its episode loop compiled once per build in
:mod:`~market.game.train_kernel`), and :mod:`~market.game.play`, which plays one negotiation on a
grid. Nothing here knows of Mesa, of particular strategies or of the
command line.
"""
