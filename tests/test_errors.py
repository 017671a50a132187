"""A signal inside compiled code is told from a failure: numba wraps it in SystemErrors."""

from __future__ import annotations

import pytest

from market.errors import reraise_signal, signal_under


def _wrapped(inner: BaseException, layers: int) -> BaseException:
    exc = inner
    for _ in range(layers):
        outer = SystemError("returned a result with an exception set")
        outer.__cause__ = exc
        exc = outer
    return exc


@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("inner", [KeyboardInterrupt(), SystemExit(143)])
def test_the_signal_under_numbas_system_errors_is_found(inner, layers):
    exc = _wrapped(inner, layers)
    assert signal_under(exc) is inner
    with pytest.raises(type(inner)):
        reraise_signal(exc)


@pytest.mark.parametrize("exc", [ValueError("x"), _wrapped(ValueError("a failure"), 2),
                                 SystemError("no cause")])
def test_a_failure_is_not_a_signal(exc):
    assert signal_under(exc) is None
    reraise_signal(exc)  # raises nothing: the caller's own handling goes on
