"""Fleet workers ride out a PostgreSQL restart (issue 35): a replica whose database
restarts reconnects (with backoff), takes the jobs queued since and runs each event once;
when the database stays away past ``--give-up-after`` it stops with a non-zero status
(before, every replica stopped at the first restart with exit status 0).

The database is a server of this test's own (``tests/pgserver.py``), not the session's,
since it is stopped under the worker."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from _fleet_support import (
    REGIONS,
    SANDBOX_LIMITS,
    created_refs,
    secrets_env,
    start_worker,
    stop_workers,
    wait_for_workers,
    write_fleet,
)

from pgserver import PostgresServer, postgres_binaries
from practiceflow.cli.db import migrate_state
from practiceflow.fleet import accept_event, load_fleet, make_app
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(postgres_binaries() is None, reason="needs PostgreSQL binaries"),
]

#: Generous bound against a hang; never a speed assertion. Giving up takes about 40 s on
#: an idle machine (the queue's worker notices the loss after some 27-30 s, then
#: --give-up-after), and more under the suite's load, or when the database goes while a
#: job runs (procrastinate waits for it, and it waits for the pool).
PATIENCE = 180.0


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


def _accept(url: str, fleet_file: Path, refs: list[str]) -> None:
    config = load_fleet(fleet_file)
    app = make_app(url, sync=True)
    with PostgresStore(url) as store, app.open():
        for ref in refs:
            accept_event(
                app, store, config.practices["alpha"], "test_event", "t", ref, {"ref": ref}
            )


def _wait_created(sandbox: SandboxHandle, refs: list[str], worker_log: Path) -> None:
    deadline = time.monotonic() + PATIENCE
    while not set(refs) <= set(created_refs(sandbox, REGIONS["alpha"])):
        assert time.monotonic() < deadline, worker_log.read_text()[-3000:]
        time.sleep(0.3)


def test_a_worker_rides_out_a_database_restart_and_exits_non_zero_when_it_gives_up(
    own_server: PostgresServer, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    url = own_server.new_database("restart")
    migrate_state(url)
    fleet_file = write_fleet(tmp_path, sandbox)
    env = {**os.environ, **secrets_env(sandbox)}
    log = tmp_path / "worker.log"
    worker = start_worker(fleet_file, url, env, log, "--sweep-every", "2", "--give-up-after", "8")
    try:
        wait_for_workers(url, 1, [log])
        _accept(url, fleet_file, ["before-0", "before-1"])
        _wait_created(sandbox, ["before-0", "before-1"], log)

        own_server.halt()
        time.sleep(2)  # down for a moment, as a restart is
        own_server.resume()
        _accept(url, fleet_file, ["after-0", "after-1", "after-2"])
        _wait_created(sandbox, ["after-0", "after-1", "after-2"], log)
        assert worker.poll() is None, log.read_text()[-3000:]

        own_server.halt()  # and now for good: the worker gives up, saying so
        code = worker.wait(timeout=PATIENCE)
    finally:
        stop_workers([worker])
        if worker.poll() is None:  # pragma: no cover - stop_workers kills it
            worker.kill()
    output = log.read_text()
    assert code == 4, output[-3000:]
    assert "giving up" in output
    assert "Traceback" not in output.split("giving up")[-1]
    refs = Counter(created_refs(sandbox, REGIONS["alpha"]))
    wanted = ["before-0", "before-1", "after-0", "after-1", "after-2"]
    assert {ref: refs[ref] for ref in wanted} == dict.fromkeys(wanted, 1)
