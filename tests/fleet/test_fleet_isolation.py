"""One practice's 429 pause never delays another's work in the same replica.

Beta's every request is answered 429 with ``Retry-After: 120``: its budget pauses for two
minutes. A replica with two job threads gets four of beta's events, then two of alpha's.
Beta's events are one job: its first run waits out the pause, and the job starts no other
run of beta meanwhile (beta sends one request, not four), so alpha's job and runs find
threads free: alpha's events run at once, long before beta's pause ends, while beta's stay
pending, not lost. Were each event a job of its own, every thread would sleep in beta's
pause and alpha would wait two minutes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _fleet_support import (
    SANDBOX_LIMITS,
    secrets_env,
    start_worker,
    stop_workers,
    wait_for_workers,
    write_fleet,
)

from practiceflow.fleet import accept_event, load_fleet, make_app
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

PAUSE_S = 120


def test_a_paused_practice_leaves_the_replicas_threads_to_the_others(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "rate_limit", "count": 10_000, "region": "uk", "retryAfter": PAUSE_S},
    )
    fleet_file = write_fleet(tmp_path, sandbox)
    env = {**os.environ, **secrets_env(sandbox)}
    log = tmp_path / "worker.log"
    worker = start_worker(fleet_file, pg_url, env, log, "--concurrency", "2")
    config = load_fleet(fleet_file)
    app = make_app(pg_url)
    try:
        wait_for_workers(pg_url, 1, [log])
        with PostgresStore(pg_url) as store, app.open():
            for name, count in (("beta", 4), ("alpha", 2)):
                for n in range(count):
                    ref = f"{name}-{n}"
                    accept_event(
                        app, store, config.practices[name], "test_event", "test.event", ref,
                        {"ref": ref},
                    )  # fmt: skip
            started = time.monotonic()
            while len(store.list_runs(practice="alpha", status="succeeded")) < 2:
                waited = time.monotonic() - started
                # Generous, yet well inside beta's pause: alpha must not wait for it.
                assert waited < PAUSE_S - 20, log.read_text()[-3000:]
                time.sleep(0.2)
            beta_done = store.list_runs(practice="beta", status="succeeded")
            beta_pending = store.pending_events("beta", 10)
            sent = sandbox.admin("GET", "/_admin/requests")
    finally:
        stop_workers([worker])
        sandbox.admin("DELETE", "/_admin/faults")
    assert beta_done == []  # beta is still paused: nothing of it ran around the pause
    assert sorted(event.event_id for event in beta_pending) == [f"beta-{n}" for n in range(4)]
    beta_sent = [row for row in sent if row["region"] == "uk"]
    assert [row["status"] for row in beta_sent] == [429]  # no other run of beta began
