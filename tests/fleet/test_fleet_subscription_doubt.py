"""A ``practiceflow worker`` whose store holds a subscription in doubt still starts (issue 24):
it lists the doubt once as needing attention, across restarts, stays ready for the other
triggers' deliveries, and polls the trigger in doubt (it has a poll source) instead."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from _fleet_support import (
    PRACTICE_LIMITS,
    SANDBOX_LIMITS,
    TEST_MODULES,
    secrets_env,
    start_worker,
    stop_workers,
)

from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

ACCEPTED = """\
name: fleet accepted
trigger:
  use: proposal_accepted
  mode: webhook
  with:
    entityKey: {entity}
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{{{ trigger.entityKey }}}}"
"""
FORMS = """\
name: fleet forms
trigger:
  use: eform_submitted
steps:
  - id: read
    use: get_client
    with:
      entityKey: "{{ trigger.entityKey }}"
"""


def _entries(store: PostgresStore) -> list[Any]:
    return store.list_attention(kind="subscription_in_doubt", trigger="proposal_accepted")


def _fleet(folder: Path, sandbox: SandboxHandle, entity: str) -> Path:
    (folder / "accepted.yaml").write_text(ACCEPTED.format(entity=entity), encoding="utf-8")
    (folder / "forms.yaml").write_text(FORMS, encoding="utf-8")
    client_id, _ = sandbox.credentials("anz", "rw")
    lines = [
        f"modules: [{TEST_MODULES}]",
        "practices:",
        "  alpha:",
        f"    client_id: {client_id}",
        "    client_secret_env: SECRET_ALPHA",
        f"    base_url: {sandbox.base_url('anz')}",
        "    recipes: [accepted.yaml, forms.yaml]",
        "    poll_every: 1",
        f"    limits: {PRACTICE_LIMITS}",
    ]
    path = folder / "fleet.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(what: str, check: Any, logs: list[Path], timeout: float = 45) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        shown = [log.read_text(errors="replace")[-3000:] for log in logs if log.exists()]
        assert time.monotonic() < deadline, (what, shown)
        time.sleep(0.2)
    return found


def _ready(public: str) -> requests.Response | None:
    answer = requests.get(f"{public}/readyz", timeout=10)
    return answer if answer.status_code == 200 else None


def _read(url: str, read: Any) -> Any:
    with PostgresStore(url) as store:
        return read(store)


def test_a_worker_lists_a_subscription_in_doubt_once_and_polls_its_trigger_instead(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    rows = sandbox.admin("GET", "/_admin/records/proposals")
    opened = next(row for row in rows if row["status"] in ("Sent", "Draft"))
    proposal, entity = str(opened["proposalKey"]), str(opened["entityKey"])
    port = _free_port()
    public = f"http://127.0.0.1:{port}"
    with PostgresStore(pg_url) as store:  # left by a replica killed mid-subscribe
        url = public + "/hooks/left-by-a-kill"
        store.save_subscription(
            "alpha", "proposal_accepted", None, "proposal.accepted", url, "", "left", "pending"
        )
    fleet_file = _fleet(tmp_path, sandbox, entity)
    env = {**os.environ, **secrets_env(sandbox)}
    args = ("--listen", f"127.0.0.1:{port}", "--public-url", public, "--sweep-every", "3600")
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for number, log in enumerate(logs):
            workers.append(start_worker(fleet_file, pg_url, env, log, *args))
            _wait("the receiver", lambda log=log: "receiving webhooks on" in log.read_text(), logs)
            assert workers[-1].poll() is None, log.read_text()

            def subscribed(store: PostgresStore) -> bool:
                row = store.get_subscription("alpha", "eform_submitted")
                return row is not None and row.status == "active"

            assert _read(pg_url, subscribed)
            entries = _read(pg_url, _entries)
            assert [(entry.practice, entry.status) for entry in entries] == [("alpha", "open")]
            ready = _wait(
                "readiness (the other trigger's receiver must stay in the balancer)",
                lambda: _ready(public),
                logs,
            )
            assert ready.json()["attention"] == ["alpha / proposal_accepted: subscription pending"]
            if number == 0:
                _wait(
                    "the poller's first poll (a baseline)",
                    lambda: _read(
                        pg_url, lambda store: store.get_cursor_state("alpha", "proposal_accepted")
                    ),
                    logs,
                )
                sandbox.admin("POST", f"/_admin/proposals/{proposal}/accept")
                (run,) = _wait(
                    "the acceptance's run, by polling",
                    lambda: _read(
                        pg_url,
                        lambda store: store.list_runs(
                            recipe="fleet accepted", status="succeeded", limit=10
                        ),
                    ),
                    logs,
                )
                assert run.origin["via"] == "poll"
            stop_workers(workers)
    finally:
        stop_workers(workers)

    (entry,) = _read(pg_url, _entries)
    message = entry.reason
    assert "received by polling" in message
    assert "unsubscribe proposal_accepted --forget --practice alpha" in message
    kept = _read(pg_url, lambda store: store.get_subscription("alpha", "proposal_accepted"))
    assert kept.status == "pending"  # never repeated, never forgotten by itself
    assert [row["event"] for row in sandbox.admin("GET", "/_admin/records/subscriptions")] == [
        "eform.submitted"
    ]
