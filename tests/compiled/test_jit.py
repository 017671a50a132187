"""The compiled helpers every path shares (market.compiled.jit, market.game.numeric): same
numbers, whatever the path."""

from __future__ import annotations

import numpy as np
import pytest

from market.compiled import jit
from market.game import numeric

pytestmark = pytest.mark.skipif(jit.numba is None, reason="numba is not installed")


@jit.njit
def _draws(rng_or_handle, n):  # noqa: ANN001, ANN202
    rng = jit.generator(rng_or_handle)
    out = np.empty(n)
    for i in range(n):
        out[i] = rng.random()
    return out, rng.integers(0, 1000), numeric.permutation(rng, np.arange(6))


def test_a_generator_handle_draws_what_the_generator_draws_from_the_same_state():
    """A compiled entry point given ``rng_handle(rng)`` draws exactly what it draws given
    ``rng``, and from the same state: Python's draws between calls see the compiled ones."""
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    handle = jit.rng_handle(a)
    for _ in range(3):
        x, y = _draws(handle, 7), _draws(b, 7)
        assert np.array_equal(x[0], y[0]) and x[1] == y[1] and np.array_equal(x[2], y[2])
        assert a.random() == b.random()  # the state moved on for both
        assert a.integers(1 << 40) == b.integers(1 << 40)
    assert a.bit_generator.state == b.bit_generator.state


def test_a_handle_is_five_integers_cheap_to_pass():
    handle = jit.rng_handle(np.random.default_rng(0))
    assert len(handle) == 5 and all(isinstance(v, int) and v > 0 for v in handle)


def test_exp_and_power_are_the_compiled_engines_bits():
    x = np.linspace(-800.0, 5.0, 997)
    assert np.array_equal(numeric.exp(x), [numeric.exp1(v) for v in x])
    assert (numeric.exp(np.array([-747.0, -1000.0])) == 0.0).all()
    y = np.linspace(0.1, 3.0, 997)
    assert np.array_equal(numeric.power(np.abs(x) + 1.0, y),
                          [numeric.power1(u, v) for u, v in zip(np.abs(x) + 1.0, y, strict=True)])


def test_handles_follow_the_generator_they_are_given_even_in_a_copy():
    """A copied model or environment (its generator copied with it) must not draw from the
    original's state through a remembered handle."""
    import copy
    import pickle

    rng = np.random.default_rng(3)
    handles = jit.Handles()
    first = handles(rng)
    assert handles(rng) is first
    for twin in (copy.deepcopy((handles, rng)), pickle.loads(pickle.dumps((handles, rng)))):
        assert twin[0](twin[1]) != first  # another state, another handle
        x, y = _draws(twin[0](twin[1]), 4), _draws(np.random.default_rng(3), 4)
        assert np.array_equal(x[0], y[0])
    assert rng.bit_generator.state == np.random.default_rng(3).bit_generator.state  # untouched


@jit.njit
def _lend_and_write(arrays):  # noqa: ANN001, ANN202
    (a, (b, k)), c = jit.borrowed(arrays)
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            total += a[i, j]
            a[i, j] = -a[i, j]
    b[:] = k
    c[0] = total
    return total + b.sum()


def test_lent_arrays_are_the_callers_own_data_read_and_written_in_place():
    """What compiled code reads and writes through ``borrowed`` (the arrays of nested tuples,
    a strided view among them; scalars passed through) is the caller's arrays themselves."""
    base = np.arange(24.0).reshape(4, 6)
    a = base[::2, 1::2]  # strided: the lent view keeps shape and strides
    b, c = np.zeros(3, dtype=np.int64), np.zeros(1)
    expected = a.sum()
    assert _lend_and_write(((a, (b, 7)), c)) == expected + 21
    assert np.array_equal(base[::2, 1::2], -np.arange(24.0).reshape(4, 6)[::2, 1::2])
    assert (b == 7).all() and c[0] == expected
    assert base[1].tolist() == list(np.arange(6.0, 12.0))  # rows not in the view untouched


@jit.njit
def _integers(rng, bounds):  # noqa: ANN001, ANN202
    out = np.empty(bounds.shape[0], dtype=np.int64)
    for i in range(bounds.shape[0]):
        out[i] = numeric.integer(rng, bounds[i, 0], bounds[i, 1])
    return out


def test_an_integer_draw_is_numpys_draw_from_the_same_state_compiled_or_not():
    """``numeric.integer`` (a ZI trader's quote) draws what ``rng.integers(low, high)`` draws, in
    compiled code and in Python, and leaves the generator where numpy leaves it: spans of
    one value, small ones, 2**32 and wider."""
    bounds = np.array([[3, 4], [1, 6], [-5, 5], [0, 2**32], [0, 2**32 + 1], [7, 2**40],
                       [-(2**62), 2**62], [1, 101]] * 25, dtype=np.int64)
    a, b, c = (np.random.default_rng(21) for _ in range(3))
    expected = [int(a.integers(lo, hi)) for lo, hi in bounds]
    assert _integers(b, bounds).tolist() == expected
    assert [numeric.integer(c, int(lo), int(hi)) for lo, hi in bounds] == expected
    assert a.bit_generator.state == b.bit_generator.state == c.bit_generator.state
