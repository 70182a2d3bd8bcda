"""The replica's queue worker looks for due jobs at least as often as it postpones them,
and its LISTEN connection sleeps until a job is queued.

A job postponed for later (a practice whose slots were all taken: a burst of its events)
wakes no worker when it becomes due; procrastinate's worker looks only when another job
is queued, or every 5 s by default, which put up to 5 s on a burst's event -> write.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from psycopg import waiting

from practiceflow.errors import StoreError
from practiceflow.fleet import worker_loop
from practiceflow.fleet.queue import FETCH_EVERY_S, make_app
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


def test_the_queues_listen_connection_waits_on_its_socket_not_a_tenth_second_timer(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # psycopg's waits wake every `interval` to look for interrupts; at its 0.1 s, an idle
    # replica's LISTEN connection woke ten times a second. A NOTIFY must still arrive.
    intervals: list[float] = []
    real_wait = waiting.wait_async

    async def spy(gen: Any, fileno: int, interval: float = 0.0, timeout: Any = None) -> Any:
        intervals.append(interval)
        return await real_wait(gen, fileno, interval=interval, timeout=timeout)

    monkeypatch.setattr(waiting, "wait_async", spy)

    async def scenario() -> str:
        app = make_app(pg_url)
        received: asyncio.Queue[str] = asyncio.Queue()

        async def on_notification(*, channel: str, payload: str) -> None:
            await received.put(payload)

        async with app.open_async():
            listening = asyncio.create_task(
                app.connector.listen_notify(on_notification, ["pf_quiet_test"])
            )
            try:
                # A synchronous connection: its waits are not the spied ones.
                with psycopg.connect(pg_url, autocommit=True) as other:
                    for _ in range(120):  # until the LISTEN is in place
                        other.execute("NOTIFY pf_quiet_test, 'queued'")
                        try:
                            return await asyncio.wait_for(received.get(), 0.5)
                        except TimeoutError:
                            continue
                raise AssertionError("the NOTIFY never reached the listening connection")
            finally:
                listening.cancel()

    assert asyncio.run(scenario()) == "queued"
    assert intervals, "the queue's connections never waited"
    assert min(intervals) >= 5.0


def test_giving_up_comes_at_give_up_after_not_at_the_next_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The backoff's waits double (1, 2, 4, 8 ... 30 s): with --give-up-after 8 the look
    # after 8 s came at 15 s. A wait now ends when the replica is due to give up.
    looks: list[float] = []

    async def never(url: str) -> bool:
        looks.append(time.monotonic())
        return False

    monkeypatch.setattr(worker_loop, "_answers", never)

    async def lose() -> None:
        lost_at = time.monotonic()
        waiting_for = worker_loop._wait_for_database(
            "postgresql://unused", "db", asyncio.Event(), lost_at, 0.2, 60.0
        )
        with pytest.raises(StoreError, match=r"did not answer for 0\.2 s; giving up"):
            await asyncio.wait_for(waiting_for, timeout=30)  # a hang bound, not a speed check

    asyncio.run(lose())
    assert len(looks) == 1  # one look, at the end of the 0.2 s, not after the 60 s wait
