"""Compiling, below the game: numba, its guarded cache, the modules generated from sources.

The machinery that exists to compile, in one home that knows no game, no
strategy and no market: :mod:`~market.compiled.jit` (numba imported once,
the ``njit`` every cached function goes through, the numeric functions both
market paths share, the generator handle), :mod:`~market.compiled.compile_cache`
(numba's cache, guarded: never old code, never a traceback from a bad file)
and :mod:`~market.compiled.generated` (modules named by the digest of their
sources). The game compiles through it; :mod:`market.engines`, above the
strategies, generates their rules into the game's loops with it.
"""
