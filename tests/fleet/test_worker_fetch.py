"""The replica's queue worker looks for due jobs at least as often as it postpones them.

A job postponed for later (a practice whose slots were all taken: a burst of its events)
wakes no worker when it becomes due; procrastinate's worker looks only when another job
is queued, or every 5 s by default, which put up to 5 s on a burst's event -> write.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from practiceflow.fleet.queue import FETCH_EVERY_S
from practiceflow.fleet.runtime import _BUSY_RETRY_S
from practiceflow.fleet.worker_loop import run_worker


class _RecordingApp:
    """Stands in for procrastinate's app: records the worker's options, then asks the
    replica to stop (SIGTERM, as a supervisor would)."""

    def __init__(self) -> None:
        self.options: dict[str, Any] = {}

    @asynccontextmanager
    async def open_async(self) -> AsyncIterator[None]:
        yield

    async def run_worker_async(self, **options: Any) -> None:
        self.options = options
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(60)  # cancelled by run_worker once it sees the signal


def test_the_worker_looks_for_due_jobs_more_often_than_a_job_is_postponed() -> None:
    app = _RecordingApp()

    asyncio.run(run_worker(app, "postgresql://unused", "db", concurrency=3, give_up_after=1))  # type: ignore[arg-type]

    assert app.options["concurrency"] == 3
    assert app.options["fetch_job_polling_interval"] == FETCH_EVERY_S
    assert FETCH_EVERY_S <= _BUSY_RETRY_S


def test_a_caller_may_still_set_its_own_interval() -> None:
    app = _RecordingApp()

    asyncio.run(
        run_worker(
            app,  # type: ignore[arg-type]
            "postgresql://unused",
            "db",
            concurrency=1,
            give_up_after=1,
            fetch_job_polling_interval=2.0,
        )
    )

    assert app.options["fetch_job_polling_interval"] == 2.0
