"""Compiling, below the game: numba, the build folder, the modules generated from sources.

The machinery that exists to compile, in one home that knows no game, no
strategy and no market: :mod:`~market.compiled.jit` (the ``njit`` every
compiled function goes through, the numeric functions both market paths
share, the generator handle), :mod:`~market.compiled.build` (compiling as a
build step: a cache folder named by the digest of what was compiled, so an
edit is never played from an old compile; the generated modules; the one way
an entry point is built) and :mod:`~market.compiled.internals` (what is
taken from numba beyond its public API, and why). The game compiles through
it; :mod:`market.compiled_game`, above the strategies, generates their rules into
the game's loops with it.
"""
