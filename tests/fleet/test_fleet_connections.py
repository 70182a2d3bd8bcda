"""The fleet's one HTTP pool holds a connection for every thread that sends through it.

An owning replica sends from its job threads and from its poll threads: a pool sized for
the job threads alone overflowed at N = 3,000 ("Connection pool is full, discarding
connection": a new connection per request past its size). Here as many requests as both
kinds of thread send at once (answers held back so that they overlap) are all answered on
connections the pool keeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_support import SANDBOX_LIMITS, secrets_env, write_fleet

from practiceflow.fleet import Fleet, load_fleet, make_app
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

#: Job threads' connections the fleet is sized for (``budget_connections``).
JOB_THREADS = 2


@pytest.fixture
def owned_fleet(pg_url: str, tmp_path: Path, sandbox: SandboxHandle) -> Iterator[Fleet]:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS, "latencyMs": 300})
    config = load_fleet(write_fleet(tmp_path, sandbox))
    app = make_app(pg_url)
    with PostgresStore(pg_url) as store, app.open():
        made = Fleet(
            config,
            store,
            pg_url,
            app,
            environ=secrets_env(sandbox),
            budget_connections=JOB_THREADS,
            owned=True,
        )
        try:
            yield made
        finally:
            made.close()
            sandbox.admin("POST", "/_admin/config", {"latencyMs": 0})


def test_job_and_poll_threads_sending_at_once_fit_the_pool(
    owned_fleet: Fleet, sandbox: SandboxHandle, caplog: pytest.LogCaptureFixture
) -> None:
    senders = 2 * JOB_THREADS  # the job threads, and as many poll threads of the owner
    client = owned_fleet.practices["alpha"].client
    start = threading.Barrier(senders)
    answers: list[object] = []

    def send() -> None:
        start.wait()
        answers.append(client.get("/api/v1/entities", {"pageNumber": 1}))

    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    threads = [threading.Thread(target=send) for _ in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(answers) == senders
    assert [r.message for r in caplog.records if "pool is full" in r.message] == []
    pools = owned_fleet.connections.pools
    kept = sum(pools[key].num_connections for key in pools.keys())  # noqa: SIM118 -- urllib3 refuses iterating it
    assert kept == senders  # every connection opened was kept for the next request
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row["status"] for row in log] == [200] * senders
