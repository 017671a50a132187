"""Compiling: the strategies' rules generated into the game's loops, below the market.

:mod:`~market.compiled.engines` holds the one entry point that generates,
loads or compiles a set of strategies with the compiled loops, and the
compiled two-agent game every caller outside the market plays
(:func:`~market.compiled.engines.negotiate`). It imports the game and the
strategies, never the market (:mod:`market.sim`) nor Mesa.
"""
