"""Dask distributed: connect to a scheduler, or start a local cluster on loopback.

Kept apart from :mod:`market.runs.batch` so that Dask stays an optional extra: it
is imported only when ``--scheduler`` is given. Workers of a remote cluster
need this project installed (``pip install -e .``) to import
:func:`market.runs.batch.run_one`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from typing import Any

from market.errors import UsageError


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
        from market.processes import quiet_resource_tracker

        quiet_resource_tracker()
        # The workers start with Ctrl-C ignored (an ignored signal stays ignored in the
        # processes started meanwhile, and Python keeps it so): a Ctrl-C at the terminal
        # reaches the whole process group, and each worker would print a traceback of its
        # own; this process handles it and closes the cluster.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            cluster = _local_cluster(LocalCluster, processes)
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    address = scheduler if "://" in scheduler else f"tcp://{scheduler}"
    client = _connect(Client, address, scheduler, timeout)
    try:
        yield client
    finally:
        client.close()


def _local_cluster(cluster_cls: Any, processes: int) -> Any:
    """A ``LocalCluster`` of ``processes`` single-threaded workers on loopback."""
    return cluster_cls(
        n_workers=processes,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # HTTP endpoint on a free loopback port
        # CRITICAL, not ERROR: when the batch is killed, a worker may miss a heartbeat
        # before it follows its parent and would print a traceback to the user's
        # terminal; a run that fails reaches the batch as its future's exception anyway
        silence_logs=logging.CRITICAL,
    )


def _connect(client_cls: Any, address: str, scheduler: str, timeout: float) -> Any:
    """A Client for ``address``, or :class:`UsageError` within about ``timeout`` seconds.

    Dask's own ``timeout`` bounds the TCP connection but not the handshake: a
    server that accepts and then says something else (an HTTP server, say)
    would keep it waiting for ever. So the connection runs in a daemon thread
    with a hard deadline, and whatever goes wrong there is reported as one line.
    """
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_cls(address, timeout=f"{timeout}s")
        except BaseException as exc:  # noqa: BLE001 - reported to the user below
            box["error"] = exc

    # a little longer than Dask's own timeout, so that its clearer error (refused,
    # unreachable) wins when there is one
    deadline = timeout + min(5.0, max(1.0, timeout))
    thread = threading.Thread(target=connect, name="dask-connect", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        raise UsageError(
            f"--scheduler: no Dask scheduler answered at {scheduler} within {deadline:g} s "
            f"(is it a Dask scheduler?)"
        )
    if "error" in box:
        exc = box["error"]
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, MemoryError):
            reason = "the reply was not a Dask scheduler's"
        raise UsageError(f"--scheduler: cannot reach {scheduler} ({reason[:160]})")
    return box["client"]
