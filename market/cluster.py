"""Dask distributed: connect to a scheduler, or start a local cluster on loopback.

Kept apart from :mod:`market.batch` so that Dask stays an optional extra: it
is imported only when ``--scheduler`` is given. Workers of a remote cluster
need this project installed (``pip install -e .``) to import
:func:`market.batch.run_one`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from market.cli.common import UsageError


@contextlib.contextmanager
def connect(scheduler: str, processes: int = 1, timeout: float = 5.0) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (an address, or ``"local"``), closed on exit.

    ``"local"`` starts a ``LocalCluster`` of ``processes`` single-threaded
    worker processes listening on 127.0.0.1 only (its HTTP endpoint on a free
    loopback port, so a busy 8787 is no matter). An
    unreachable address raises :class:`UsageError` after ``timeout`` seconds.
    """
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--scheduler needs dask.distributed (pip install 'negotiation-market[cluster]')"
        ) from None
    if scheduler == "local":
        cluster = LocalCluster(
            n_workers=processes,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # HTTP endpoint on a free loopback port
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    address = scheduler if "://" in scheduler else f"tcp://{scheduler}"
    try:
        client = Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"--scheduler: cannot reach {scheduler} ({reason[:160]})") from None
    try:
        yield client
    finally:
        client.close()
