"""Negotiation market: bargaining between software agents, from two traders to thousands.

Layers, bottom to top; a layer imports only the layers below it:

1. :mod:`market.errors`, :mod:`market.limits`, :mod:`market.files`: the error
   type for bad parameters, size caps, atomic writes.
2. :mod:`market.game`: the two-agent game (rules, mechanism, negotiation
   record, price grid, Q-table layout and files, exact evaluation, training and
   its compiled kernel).
3. :mod:`strategies` (a package beside this one): every strategy, its
   registry and the parser of strategy specs.
4. :mod:`market.sim`: the Mesa market (agents, model, parameters, ledger,
   learners, metrics); :mod:`market.interop`: the game inside NegMAS and as
   PettingZoo and Gymnasium environments.
5. :mod:`market.plots`: figures of training, of a market run, of a batch.
6. :mod:`market.runs` and :mod:`market.view`: many runs (tournament, batch,
   Dask cluster); the browser and terminal views.
7. :mod:`market.bench`, :mod:`market.cli`: measurement and the command line,
   which parse, call and print.

Data flows protocol -> negotiation record -> model metrics -> plots and files.
"""
