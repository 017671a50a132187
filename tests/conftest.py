"""Shared fixtures: a seeded generator and a one-call bilateral negotiation."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import strategies
from market.game.protocol import Side, negotiate
from market.game.record import BatchRecord
from market.game.rules import Protocol


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build the market engine, the two-agent game and the training kernel once before any
    test (``run.py build``'s work, on both cores), so the workers load them and no test sees
    a compile notice unless it asks for one."""
    if hasattr(session.config, "workerinput"):
        return
    from market.sim.engine import build_all

    build_all(on_compile=lambda: None)


def _duel(
    seller: str | Any,
    buyer: str | Any,
    *,
    prices: int = 5,
    rounds: int = 5,
    seller_range: tuple[int, int] | None = None,
    buyer_range: tuple[int, int] | None = None,
    first: int | np.ndarray = 0,
    n: int = 1,
    seed: int = 0,
) -> BatchRecord:
    """``n`` negotiations of one Seller strategy against one Buyer strategy (names or objects).

    Ranges are acceptable levels ``(lo, hi)``, the whole grid by default.
    """
    protocol = Protocol(prices, rounds)
    s = strategies.make(seller, "seller", 1, protocol) if isinstance(seller, str) else seller
    b = strategies.make(buyer, "buyer", 1, protocol) if isinstance(buyer, str) else buyer
    s_lo, s_hi = seller_range or (1, prices)
    b_lo, b_hi = buyer_range or (1, prices)
    return negotiate(
        protocol,
        Side.single(s, n, s_lo, s_hi),
        Side.single(b, n, b_lo, b_hi),
        first,
        np.random.default_rng(seed),
    )


@pytest.fixture
def duel() -> Callable[..., BatchRecord]:
    return _duel


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


def _can_mount_read_only() -> bool:
    """Whether a test may mount a folder read-only (root, in a mount namespace of its own):
    the only way to make a folder unwritable to root, who ignores file modes."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind /tmp /tmp && "
                            "mount -o remount,bind,ro /tmp && ! touch /tmp/.ro-probe"],
                           capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


@pytest.fixture
def read_only() -> Callable[..., list[str]]:
    """``read_only(cmd, *folders)``: ``cmd`` run with ``folders`` mounted read-only for it
    alone (nobody else sees the mount); skips where that cannot be done."""
    if not _can_mount_read_only():
        pytest.skip("cannot mount a folder read-only here (needs root and unshare)")

    def wrap(cmd: list[str], *folders: Path) -> list[str]:
        mounts = " && ".join(f"mount --bind {f} {f} && mount -o remount,bind,ro {f}"
                             for f in folders)
        return ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$@"', "sh", *cmd]

    return wrap
