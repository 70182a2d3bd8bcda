"""A replica rides out a database restart, and says so when it gives up.

procrastinate's worker returns, as if asked to stop, when a side task loses the database.
:func:`run_worker` starts a new worker on a fresh pool once the database answers again
(backoff 1 s to 30 s); the old worker's jobs go back to the queue by the stalled check and
the journal keeps any step from being sent twice. After ``give_up_after`` seconds the
replica stops with :class:`~practiceflow.errors.StoreError` (exit 4) for its supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import procrastinate
import psycopg

from practiceflow.errors import StoreError
from practiceflow.fleet.queue import FETCH_EVERY_S

__all__ = ["run_worker"]

logger = logging.getLogger("practiceflow.fleet")

#: Seconds between looks for the database: the first, and the longest.
_FIRST_WAIT = 1.0
_LONGEST_WAIT = 30.0


async def _answers(url: str) -> bool:
    """Whether the database takes a connection and a query now."""
    try:
        connection = await psycopg.AsyncConnection.connect(url, connect_timeout=5)
        async with connection:
            await connection.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


async def _one_worker(app: procrastinate.App, options: dict[str, Any]) -> None:
    async with app.open_async():  # a fresh pool: the old one's connections died with it
        await app.run_worker_async(install_signal_handlers=False, **options)


async def _wait_for_database(
    url: str, where: str, stopping: asyncio.Event, lost_at: float, give_up_after: float, wait: float
) -> float:
    """Wait ``wait`` seconds, then until the database answers (the wait doubling), or
    raise once it has not since ``lost_at`` for ``give_up_after`` (a wait ends then at the
    latest); the next wait."""
    while not stopping.is_set():
        left = max(0.0, lost_at + give_up_after - time.monotonic())  # no look past the end
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=min(wait, left))
        wait = min(wait * 2, _LONGEST_WAIT)
        if await _answers(url):
            logger.warning("worker: %s answers; starting a new worker", where)
            return wait
        if time.monotonic() - lost_at >= give_up_after:
            message = (
                f"worker: {where} did not answer for {give_up_after:g} s; giving up (the "
                "replica's jobs go back to the queue; start it again once the database is up)"
            )
            raise StoreError(message)
    return wait


async def run_worker(
    app: procrastinate.App,
    url: str,
    where: str,
    *,
    concurrency: int,
    give_up_after: float,
    **options: Any,
) -> None:
    """Run the queue's worker until SIGTERM or SIGINT, starting it again after it lost
    the database (see the module docstring).

    procrastinate runs a synchronous job in the event loop's default executor, which
    asyncio sizes from the CPU count, not from ``--concurrency``: the loop gets a thread
    per job slot, so that jobs waiting on the API do not wait for a thread.

    Args:
        app: the worker's procrastinate app (not opened).
        url: the database's URL (to see when it answers again).
        where: the database described without its password, for messages.
        concurrency: jobs at once.
        give_up_after: seconds without the database after which the replica stops.
        **options: the rest of procrastinate's worker options.

    Raises:
        StoreError: the database did not come back within ``give_up_after``.
    """
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=concurrency + 1, thread_name_prefix="pf-job")
    loop.set_default_executor(executor)
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    # A postponed job is looked for as soon as it is due (queue.FETCH_EVERY_S).
    options = {"fetch_job_polling_interval": FETCH_EVERY_S, **options, "concurrency": concurrency}
    lost_at: float | None = None
    wait = _FIRST_WAIT
    while not stopping.is_set():
        began = time.monotonic()
        worker = asyncio.create_task(_one_worker(app, options))
        stop = asyncio.create_task(stopping.wait())
        await asyncio.wait({worker, stop}, return_when=asyncio.FIRST_COMPLETED)
        if stopping.is_set():
            worker.cancel()  # procrastinate stops gracefully: current jobs finish
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await worker
            return
        stop.cancel()
        if time.monotonic() - began > _LONGEST_WAIT:  # it ran: a new loss, not a retry
            lost_at, wait = None, _FIRST_WAIT
        lost_at = lost_at or time.monotonic()
        error = worker.exception()
        reason = f"{type(error).__name__}: {error}" if error else "its worker stopped"
        logger.error("worker: lost %s (%s); waiting for it to answer", where, reason)
        wait = await _wait_for_database(url, where, stopping, lost_at, give_up_after, wait)
