"""Three ``practiceflow worker`` processes against the sandbox; one is killed with SIGKILL
in the middle of a burst. The sandbox's own records prove every event ran exactly once,
with its practice's credentials, and that no request was refused with 429.

The burst is 120 events (90 + 30 over two practices), not the 1,000 of the issue, to keep
the suite's time bounded; ``bench/fleet.py`` runs larger bursts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from _fleet_support import REGIONS, SANDBOX_LIMITS, created_refs, secrets_env, write_fleet

from practiceflow.fleet import accept_event, load_fleet, make_app
from practiceflow.state.postgres import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL"),
]

BURST = {"alpha": 90, "beta": 30}


def _workers_alive(url: str) -> int:
    with psycopg.connect(url) as raw:
        row = raw.execute(
            "SELECT count(*) FROM procrastinate_workers"
            " WHERE last_heartbeat > now() - interval '5 seconds'"
        ).fetchone()
    return 0 if row is None else int(row[0])


def _diagnose(url: str, store: PostgresStore, folder: Path) -> str:
    with psycopg.connect(url) as raw:
        jobs = raw.execute(
            "SELECT task_name, status, count(*) FROM procrastinate_jobs GROUP BY 1, 2"
        ).fetchall()
    runs = Counter(run.status for run in store.list_runs(limit=1000))
    pending = {name: len(store.pending_events(name, 1000)) for name in BURST}
    logs = "\n".join(p.read_text()[-1500:] for p in sorted(folder.glob("w*.log")))
    return f"pending {pending}; runs {dict(runs)}; jobs {jobs}\n{logs}"


def _start_worker(
    fleet_file: Path, url: str, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "practiceflow", "worker", "--fleet", str(fleet_file),
        "--state", url, "--heartbeat", "1", "--stalled-after", "3", "--sweep-every", "5", "-v",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603 -- our own CLI.


def test_a_replica_killed_mid_burst_loses_and_repeats_nothing(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    fleet_file = write_fleet(tmp_path, sandbox)
    env = {**os.environ, **secrets_env(sandbox)}
    workers = [_start_worker(fleet_file, pg_url, env, tmp_path / f"w{n}.log") for n in range(3)]
    try:
        deadline = time.monotonic() + 45
        while _workers_alive(pg_url) < 3:
            assert time.monotonic() < deadline, [p.read_text() for p in tmp_path.glob("w*.log")]
            time.sleep(0.2)

        config = load_fleet(fleet_file)
        app = make_app(pg_url)
        with PostgresStore(pg_url) as store, app.open():
            for name, count in BURST.items():
                for n in range(count):
                    ref = f"{name}-{n:04d}"
                    accept_event(
                        app, store, config.practices[name], "test_event", "t", ref, {"ref": ref}
                    )

            while len(store.list_runs(limit=1000)) < 20:  # mid-burst
                assert time.monotonic() < deadline + 30
                time.sleep(0.05)
            os.kill(workers[0].pid, signal.SIGKILL)
            workers[0].wait()

            deadline = time.monotonic() + 90
            while any(store.pending_events(name, 1) for name in BURST):
                assert time.monotonic() < deadline, _diagnose(pg_url, store, tmp_path)
                time.sleep(0.3)
            runs = store.list_runs(limit=1000)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()

    assert workers[0].returncode == -signal.SIGKILL
    assert Counter(run.status for run in runs) == {"succeeded": sum(BURST.values())}
    for name, region in REGIONS.items():
        refs = Counter(created_refs(sandbox, region))
        assert refs == {f"{name}-{n:04d}": 1 for n in range(BURST[name])}  # exactly once each
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row for row in log if row["status"] == 429] == []
    ids = {region: sandbox.credentials(region, "rw")[0] for region in REGIONS.values()}
    assert all(row["clientId"] == ids[row["region"]] for row in log)
