"""No silent gaps in a fleet (issue 24), with real ``practiceflow worker`` processes.

A fleet of two practices, each serving an ``eform_submitted`` recipe (webhook only: no poll
source) and a polling recipe. Its last sign of life is an hour old, as after a time when
every replica was down: two replicas started at the same moment list that window once per
practice, for ``eform_submitted`` only, and ``runs list --status in_doubt`` shows it; a
third replica started while they receive lists nothing more.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _fleet_support import (
    CHANGED,
    FORMS,
    SANDBOX_LIMITS,
    secrets_env,
    start_worker,
    stop_workers,
    write_fleet_file,
)
from click.testing import CliRunner

from practiceflow.cli import cli
from practiceflow.fleet.outage import FLEET_KEY
from practiceflow.service.heartbeat import mark_alive
from practiceflow.state import PostgresStore
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_log(logs: list[Path], text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not all(
        text in (log.read_text(errors="replace") if log.exists() else "") for log in logs
    ):
        shown = [log.read_text(errors="replace")[-3000:] for log in logs if log.exists()]
        assert time.monotonic() < deadline, (text, shown)
        time.sleep(0.2)


def _needing_attention(url: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(
        cli, ["runs", "list", "--status", "in_doubt", "--state", url, "--json"]
    )
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_workers_started_after_an_outage_list_its_window_once_per_practice(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    fleet_file = write_fleet_file(tmp_path, sandbox, {"forms.yaml": FORMS, "changed.yaml": CHANGED})
    with PostgresStore(pg_url) as store:
        down = (store.now() - timedelta(hours=1)).replace(microsecond=0)
        mark_alive(store, FLEET_KEY, down, "fleet")
    env = {**os.environ, **secrets_env(sandbox)}
    ports = [_free_port() for _ in range(3)]
    public = f"http://127.0.0.1:{ports[0]}"
    common = ("--public-url", public, "--sweep-every", "3600")
    logs = [tmp_path / f"worker{number}.log" for number in range(3)]
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for log, port in list(zip(logs, ports, strict=True))[:2]:  # at the same moment
            workers.append(
                start_worker(fleet_file, pg_url, env, log, "--listen", f"127.0.0.1:{port}", *common)
            )
        # A replica says how many practices it serves once it has checked for an outage.
        _wait_for_log(logs[:2], "practice(s) on")
        rows = _needing_attention(pg_url)
        assert sorted((row["practice"], row["recipe"]) for row in rows) == [
            ("alpha", "gap: eform_submitted"),
            ("beta", "gap: eform_submitted"),
        ]
        for row in rows:
            reason = row["reason"]
            assert f"every worker of the fleet was down from {down.isoformat()} to " in reason
        listed = sorted(row["run_id"] for row in rows)
        said = [log.read_text(errors="replace") for log in logs[:2]]
        assert sum("2 window(s) listed as needing attention" in text for text in said) == 1, said

        third = ("--listen", f"127.0.0.1:{ports[2]}", *common)
        workers.append(start_worker(fleet_file, pg_url, env, logs[2], *third))
        _wait_for_log(logs[2:], "practice(s) on")
        assert "listed as needing attention" not in logs[2].read_text(errors="replace")
        assert sorted(row["run_id"] for row in _needing_attention(pg_url)) == listed
        assert all(worker.poll() is None for worker in workers), [log.read_text() for log in logs]
    finally:
        stop_workers(workers)
