"""A running ``practiceflow worker`` answers /healthz, /readyz and /metrics per practice.

Two practices poll the sandbox every second. The sandbox answers one of beta's requests
with a 429; the scrape must show, for each practice on its own: answers by outcome (the
429 under beta only), every rate window's budget left, poll lags, runs by status, steps
in doubt and events waiting.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from _fleet_support import (
    SANDBOX_LIMITS,
    secrets_env,
    start_worker,
    stop_workers,
    wait_for_workers,
    write_fleet,
)
from prometheus_client.parser import text_string_to_metric_families

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

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(base: str) -> Samples:
    """Every sample of ``/metrics``, parsed by prometheus-client's own parser."""
    answer = requests.get(f"{base}/metrics", timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """One sample's value, or None when the series is absent."""
    return samples.get((name, tuple(sorted(labels.items()))))


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_worker_reports_every_practice_budget_lag_and_answers(
    pg_url: str, tmp_path: Path, sandbox: SandboxHandle
) -> None:
    sandbox.admin("POST", "/_admin/config", {"rateLimits": SANDBOX_LIMITS})
    fleet_file = write_fleet(tmp_path, sandbox, recipe=POLL_RECIPE, poll_every=1)
    env = {**os.environ, **secrets_env(sandbox)}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "worker.log"
    worker = start_worker(
        fleet_file, pg_url, env, log, "--concurrency", "3", "--ops-listen", f"127.0.0.1:{port}"
    )
    try:
        wait_for_workers(pg_url, 1, [log])
        assert requests.get(f"{base}/healthz", timeout=10).json() == {"status": "alive"}
        ready = wait_for(
            lambda: requests.get(f"{base}/readyz", timeout=10).status_code == 200, "ready"
        )
        assert ready
        # One 429 for beta (the UK practice); alpha must not see it.
        sandbox.admin(
            "POST",
            "/_admin/faults",
            {"kind": "rate_limit", "count": 1, "region": "uk", "retryAfter": 1},
        )
        with PostgresStore(pg_url) as store:  # the first poll fires nothing: wait for it
            wait_for(lambda: store.get_cursor_state("alpha", "new_client"), "alpha's cursor")
        body = {"entityType": "Company", "entityName": "Metric Co"}
        made = sandbox.admin("POST", "/_admin/entities", body, region="anz")
        assert made["entityKey"]

        def settled() -> Samples | None:
            samples = scrape(base)
            done = value(samples, "practiceflow_runs", practice="alpha", status="succeeded")
            limited = value(
                samples, "practiceflow_api_requests_total", practice="beta", outcome="429"
            )
            lags = [
                value(samples, "practiceflow_poll_lag_seconds_count", practice=name)
                for name in ("alpha", "beta")
            ]
            if done and limited and all(lag and lag >= 2 for lag in lags):
                return samples
            return None

        samples = wait_for(settled, "a run of alpha, a 429 of beta and polls of both", 90)
    finally:
        stop_workers([worker])
    for name in ("alpha", "beta"):
        ok = value(samples, "practiceflow_api_requests_total", practice=name, outcome="2xx")
        assert ok is not None, name
        assert ok >= 2, name
        for window, limit in (("minute", 50_000), ("hour", 900_000), ("day", 9_000_000)):
            assert value(samples, "practiceflow_budget_limit", practice=name, window=window) == (
                limit
            )
            left = value(samples, "practiceflow_budget_remaining", practice=name, window=window)
            assert left is not None, (name, window)
            assert 0 < left < limit, (name, window, left)
        assert value(samples, "practiceflow_steps_in_doubt", practice=name) == 0
        assert value(samples, "practiceflow_events_waiting", practice=name) is not None
        lag_sum = value(samples, "practiceflow_poll_lag_seconds_sum", practice=name)
        assert lag_sum is not None
        assert lag_sum >= 0
        assert value(samples, "practiceflow_budget_paused_seconds", practice=name) is not None
    assert value(samples, "practiceflow_api_requests_total", practice="alpha", outcome="429") in (
        None,
        0.0,
    )
    assert value(samples, "practiceflow_runs", practice="alpha", status="succeeded") == 1
    assert value(samples, "practiceflow_runs", practice="beta", status="succeeded") == 0
    assert value(samples, "practiceflow_store_up") == 1
