"""Two ``practiceflow worker`` replicas that receive webhooks themselves.

Both listen on their own port and are told the same public URL, replica B's (as if a load
balancer sent every delivery there). They race to subscribe at start: the fleet makes one
subscription per (practice, trigger). Proposals accepted in the sandbox are delivered to
B, which verifies them against the subscription in the shared store and queues them at
once (the sweep is an hour away); each event runs exactly once, on either replica.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

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

WEBHOOK_RECIPE = """\
name: fleet accepted proposal
trigger:
  use: proposal_accepted
  mode: webhook
steps:
  - id: client
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Fleet {{ trigger.proposalKey }}"
      externalSystemID: "{{ trigger.proposalKey }}"
"""
ACCEPTED = {"alpha": 6, "beta": 3}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "127.0.0.1:8080"], "got it without --public-url"),
        (["--public-url", "http://127.0.0.1:8080"], "got it without --listen"),
        (["--listen", "here", "--public-url", "http://h"], "expected HOST:PORT or PORT"),
        (["--listen", "8080", "--public-url", "local"], "a fleet needs the URL of the load"),
        (["--concurrency", "0"], "expected 1 or more"),
    ],
)
def test_worker_refuses_an_incomplete_receiver_configuration(
    args: list[str], message: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from practiceflow.cli import cli

    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("practices: {}\n", encoding="utf-8")
    state = "postgresql://nobody@127.0.0.1:9/none"
    result = CliRunner().invoke(cli, ["worker", "--fleet", str(fleet), "--state", state, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _open_proposals(sandbox: SandboxHandle, region: str, count: int) -> list[str]:
    rows: list[dict[str, Any]] = sandbox.admin("GET", "/_admin/records/proposals", region=region)
    keys = [row["proposalKey"] for row in rows if row["status"] in ("Sent", "Draft")]
    assert len(keys) >= count, f"the sandbox's {region} seed has {len(keys)} open proposals"
    return keys[:count]


def _wait_for_log(path: Path, text: str, timeout: float = 45) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text(errors="replace") if path.exists() else ""):
        assert time.monotonic() < deadline, path.read_text(errors="replace")
        time.sleep(0.1)


def test_a_delivery_to_any_replica_runs_once_and_the_fleet_subscribes_once(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    fleet_file = write_fleet(tmp_path, sandbox, recipe=WEBHOOK_RECIPE)
    env = {**os.environ, **secrets_env(sandbox)}
    port_a, port_b = _free_port(), _free_port()
    public = f"http://127.0.0.1:{port_b}"
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    common = ("--public-url", public, "--sweep-every", "3600", "--concurrency", "4")
    workers = [
        start_worker(fleet_file, pg_url, env, logs[0], "--listen", f"127.0.0.1:{port_a}", *common),
        start_worker(fleet_file, pg_url, env, logs[1], "--listen", f"127.0.0.1:{port_b}", *common),
    ]
    try:
        wait_for_workers(pg_url, 2, logs)
        for log in logs:
            _wait_for_log(log, "receiving webhooks on")
        accepted = {
            name: _open_proposals(sandbox, REGIONS[name], count) for name, count in ACCEPTED.items()
        }
        for name, keys in accepted.items():
            for key in keys:
                sandbox.admin("POST", f"/_admin/proposals/{key}/accept", region=REGIONS[name])

        with PostgresStore(pg_url) as store:
            deadline = time.monotonic() + 30
            while len(store.list_runs(status="succeeded", limit=100)) < sum(ACCEPTED.values()):
                assert time.monotonic() < deadline, (
                    Counter(run.status for run in store.list_runs(limit=100)),
                    [log.read_text()[-2000:] for log in logs],
                )
                time.sleep(0.2)
            time.sleep(1.0)  # let a duplicate run, if there were one, show itself
            runs = store.list_runs(limit=100)
            subscriptions = {name: store.list_subscriptions(name) for name in REGIONS}
    finally:
        stop_workers(workers)

    assert Counter(run.status for run in runs) == {"succeeded": sum(ACCEPTED.values())}
    for name, region in REGIONS.items():
        assert Counter(created_refs(sandbox, region)) == dict.fromkeys(accepted[name], 1)
        # One subscription per (practice, trigger), though both replicas started at once.
        remote = sandbox.admin("GET", "/_admin/records/subscriptions", region=region)
        assert len(remote) == 1, remote
        assert [row.trigger_key for row in subscriptions[name]] == ["proposal_accepted"]
        assert subscriptions[name][0].url.startswith(public + "/hooks/")
    deliveries = sandbox.admin("GET", "/_admin/deliveries")
    assert deliveries, "the sandbox delivered nothing"
    assert {row.get("status") for row in deliveries} == {200}, deliveries
    log = sandbox.admin("GET", "/_admin/requests")
    assert [row for row in log if row["status"] == 429] == []
    ids = {region: sandbox.credentials(region, "rw")[0] for region in REGIONS.values()}
    assert all(row["clientId"] == ids[row["region"]] for row in log)
