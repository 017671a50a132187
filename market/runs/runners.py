"""Where a batch's runs run: a process pool on this machine, or a Dask cluster.

Either way each worker runs :func:`market.runs.jobs.run_one` and the
results come back to the caller's ``finished`` callback; workers end with
their parent (Ctrl-C, SIGTERM or a crash).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
from collections.abc import Callable, Sequence
from typing import Any

from market.errors import RunFailed
from market.processes import GUARD_ENV, die_with, quiet_resource_tracker
from market.runs.jobs import RunOutcome, RunSpec, run_one


def process_pool(processes: int) -> Any:
    """A process pool for batch runs.

    forkserver: workers never inherit the parent's threads (progress
    display, Dask); the server imports the model once and each worker is a
    fork of it, so starting a worker costs no imports.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor


    quiet_resource_tracker()
    os.environ[GUARD_ENV] = str(os.getpid())  # read by the fork server's guard
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["market.runs.forkserver_guard", "market.runs.batch",
                                "market.sim.model"])
    return ProcessPoolExecutor(max_workers=processes, mp_context=ctx,
                               initializer=_worker_started, initargs=(os.getpid(),))


def _worker_started(parent: int) -> None:
    """A pool worker's first moments: it ends when the command (``parent``) does, even if
    that is killed outright; and the objects the fork server imported (about 130,000,
    alive as long as the worker) leave the cyclic collector's walks (``gc.freeze``, as
    Python advises after a fork), which took 0.7 of the 1.7-2.0 ms it spent collecting
    per 100-step run.
    """
    die_with(parent)
    gc.freeze()


def run_pool(
    todo: Sequence[RunSpec],
    per_step: bool,
    processes: int,
    finished: Callable[[RunOutcome], None],
    executor: Any = None,
) -> None:
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    owned = executor is None
    pool = process_pool(processes) if owned else executor
    with contextlib.ExitStack() as stack:
        if owned:
            stack.enter_context(pool)
        pending = set()
        queue = iter(todo)
        # keep a bounded number of runs in flight so an interrupt loses little work
        for spec in itertools.islice(queue, 4 * processes):
            pending.add(pool.submit(run_one, spec, per_step))
        try:
            while pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in ready:
                    try:
                        outcome = fut.result()
                    except BrokenProcessPool:
                        raise RunFailed(
                            "a worker process died (killed, or out of memory); every finished "
                            "run is saved: run the same command again to go on"
                        ) from None
                    finished(outcome)
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(run_one, nxt, per_step))
        except BaseException:
            for fut in pending:
                fut.cancel()
            if owned:  # stop now: do not wait for the runs in flight (they are saved parts)
                _stop_workers(pool)
            raise


def _stop_workers(pool: Any) -> None:
    """Cancel what is queued and end the pool's worker processes at once; then let the pool's
    manager thread finish closing its pipe, so Python's exit handler for pools does not
    write to it while it closes (Python 3.11 printed ``OSError: Bad file descriptor``)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        with contextlib.suppress(Exception):
            proc.terminate()
    for proc in workers:
        with contextlib.suppress(Exception):
            proc.join(5)
    if manager is not None:
        manager.join(2)


def run_dask(
    todo: Sequence[RunSpec],
    per_step: bool,
    scheduler: str,
    processes: int,
    finished: Callable[[RunOutcome], None],
    connect_timeout: float,
) -> None:
    from market.runs.cluster import connect

    with connect(scheduler, processes, connect_timeout) as client:
        from distributed import as_completed

        futures = client.map(run_one, list(todo), per_step=per_step, pure=False)
        try:
            for fut in as_completed(futures):
                finished(fut.result())
        except BaseException:
            with contextlib.suppress(Exception):
                client.cancel(futures)
            raise
