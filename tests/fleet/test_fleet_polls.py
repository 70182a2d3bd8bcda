"""Two ``practiceflow worker`` replicas poll the sandbox through periodic jobs.

With ``--polls queue``, each replica registers the same poll schedule (every second per
practice and trigger) and has spare workers (``--concurrency 4``). The sandbox answers the
list in 1.2 s, longer than the interval, so polls of one (practice, trigger) would overlap
if the poll job's lock did not hold them apart (dropping it makes this test fail); its
queueing lock keeps one waiting poll at most. Clients created behind the fleet's back (the
sandbox's admin surface) each fire once, and each run writes once.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import psycopg
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

from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

POLL_RECIPE = """\
name: fleet new client
trigger:
  use: new_client
  mode: poll
steps:
  - id: lead
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Fleet {{ trigger.entityKey }}"
      externalSystemID: "{{ trigger.entityKey }}"
"""
WAVES = 2
PER_WAVE = {"alpha": 3, "beta": 2}
ARGS = (
    "--sweep-every",
    "3600",
    "--concurrency",
    "4",
    "--polls",
    "queue",
)  # spare workers: a lock must hold
LIST_DELAY_S = 1.2  # longer than the poll interval: unlocked polls would overlap


_POLL_LINE = re.compile(
    r"^(\S+ \S+) INFO practiceflow.fleet: poll of (\S+) / new_client: (begins|ends)"
)


def _poll_spans(logs: list[Path]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Per practice: (began, ended) of every poll, read from the replicas' logs.

    The replicas log the moment a poll begins and ends, on the same host's clock; the
    poll job's lock is released only after "ends" is written.
    """
    spans: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for log in logs:
        began: dict[str, datetime] = {}
        for line in log.read_text(errors="replace").splitlines():
            found = _POLL_LINE.match(line)
            if found is None:
                continue
            moment = datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f")
            if found[3] == "begins":
                began[found[2]] = moment
            elif found[2] in began:
                spans[found[2]].append((began.pop(found[2]), moment))
    return spans


def _create_clients(sandbox: SandboxHandle, name: str, wave: int) -> list[str]:
    keys = []
    for n in range(PER_WAVE[name]):
        body = {"entityType": "Company", "entityName": f"Backstage {name} {wave}.{n}"}
        row = sandbox.admin("POST", "/_admin/entities", body, region=REGIONS[name])
        keys.append(row["entityKey"])
    return keys


def test_two_replicas_poll_one_at_a_time_and_each_new_client_runs_once(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    sandbox.admin(
        "POST",
        "/_admin/faults",
        {"kind": "slow", "count": 10_000, "pathPrefix": "/api/v1/entities/list",
         "delay": LIST_DELAY_S},
    )  # fmt: skip
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=1)
    env = {**os.environ, **secrets_env(sandbox)}
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    workers = [start_worker(fleet_file, pg_url, env, log, *ARGS) for log in logs]
    created: dict[str, list[str]] = {name: [] for name in REGIONS}
    try:
        wait_for_workers(pg_url, 2, logs)
        with PostgresStore(pg_url) as store:
            deadline = time.monotonic() + 30
            # The first poll of each practice reads the list once and fires nothing.
            while any(store.get_cursor_state(name, "new_client") is None for name in REGIONS):
                assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
                time.sleep(0.2)
            for wave in range(WAVES):
                for name in REGIONS:
                    created[name] += _create_clients(sandbox, name, wave)
                time.sleep(3.0)  # a few polls between the waves
            total = sum(len(keys) for keys in created.values())
            deadline = time.monotonic() + 30
            while len(store.list_runs(status="succeeded", limit=100)) < total:
                assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
                time.sleep(0.2)
            time.sleep(1.5)  # a few more polls: nothing may fire again
            # Which replica takes a poll job is the queue's choice, and on a loaded machine
            # one may take them all for a while: wait until each has polled, so that the
            # spans compared below come from both (polls go on every second meanwhile).
            deadline = time.monotonic() + 90
            while not all("/ new_client: begins" in log.read_text() for log in logs):
                assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
                time.sleep(0.5)
            runs = store.list_runs(limit=100)
        with psycopg.connect(pg_url) as raw:
            kept = raw.execute(
                "SELECT task_name, count(*) FROM procrastinate_jobs"
                " WHERE status = 'succeeded' GROUP BY 1"
            ).fetchall()
    finally:
        stop_workers(workers)

    assert len(runs) == total
    assert {run.status for run in runs} == {"succeeded"}
    for name, region in REGIONS.items():
        # Each client created behind the fleet's back fired one run, which wrote once.
        assert sorted(created_refs(sandbox, region)) == sorted(created[name])
        assert sorted(run.event_id for run in runs if run.practice == name) == sorted(
            f"client:{key}" for key in created[name]
        )
    spans = _poll_spans(logs)
    for name in REGIONS:
        polls = sorted(spans[name])
        assert len(polls) >= 3, polls  # the schedule polled again and again
        for (_, ended), (started, _) in itertools.pairwise(polls):
            assert ended <= started, f"two polls of {name} / new_client overlapped: {polls}"
    for log in logs:  # both replicas polled: the lock, not one replica, kept polls apart
        assert "/ new_client: begins" in log.read_text(), log.read_text()[-2000:]
    # Hundreds of ticks, polls and runs succeeded: none of them is kept in the queue.
    assert kept == []
