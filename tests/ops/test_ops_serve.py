"""``practiceflow serve`` answers /healthz, /readyz and /metrics beside its console.

A real ``serve`` process polls the sandbox; the scrape shows its practice's answers,
budget left in each window, poll lag, runs by status, steps in doubt and events waiting.
The routes need no console token, and the console's pages still do.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = """\
name: new client to lead
trigger:
  use: new_client
  mode: poll
steps:
  - id: lead
    use: create_client
    with:
      entityType: Company
      clientStatus: Lead
      entityName: "Copy {{ trigger.entityKey }}"
"""
PRACTICE = "acme"
TOKEN = "console-token-for-the-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = check()
        except requests.ConnectionError:
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _samples(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = requests.get(f"{base}/metrics", timeout=30)
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


@pytest.fixture
def serve(tmp_path: Path, sandbox: SandboxHandle) -> Iterator[str]:
    """``practiceflow serve`` polling every second; yields the console's base URL."""
    recipe = tmp_path / "copy.yaml"
    recipe.write_text(RECIPE, encoding="utf-8")
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
    env.update(
        PRACTICEFLOW_CLIENT_ID=client_id,
        PRACTICEFLOW_CLIENT_SECRET=secret,
        PRACTICEFLOW_BASE_URL=sandbox.base_url("anz"),
    )
    port = _free_port()
    command = [
        sys.executable, "-m", "practiceflow", "serve", str(recipe), "--practice", PRACTICE,
        "--state", str(tmp_path / "state.db"), "--console-listen", f"127.0.0.1:{port}",
        "--console-token", TOKEN,
    ]  # fmt: skip
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - our own CLI
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_serve_reports_its_practice_on_metrics_beside_the_console(
    serve: str, sandbox: SandboxHandle
) -> None:
    assert _wait_for(lambda: requests.get(f"{serve}/healthz", timeout=5).ok, "healthz")
    assert requests.get(f"{serve}/healthz", timeout=5).json() == {"status": "alive"}
    ready = _wait_for(
        lambda: requests.get(f"{serve}/readyz", timeout=5).status_code == 200, "readyz"
    )
    assert ready
    # The console itself still wants its token; the probes above did not.
    assert requests.get(f"{serve}/console/api/recipes", timeout=5).status_code == 401

    def first_poll_done() -> bool:
        samples = _samples(serve)
        return bool(
            samples.get(
                ("practiceflow_api_requests_total", (("outcome", "2xx"), ("practice", PRACTICE)))
            )
        )

    _wait_for(first_poll_done, "the first poll's answers")
    samples = _samples(serve)
    key = (("practice", PRACTICE),)
    for window, limit in (("minute", 60), ("hour", 1000), ("day", 10000)):
        labels = (("practice", PRACTICE), ("window", window))
        assert samples[("practiceflow_budget_limit", labels)] == limit
        left = samples[("practiceflow_budget_remaining", labels)]
        assert left < limit  # the validate call and the first poll were counted
    assert samples[("practiceflow_steps_in_doubt", key)] == 0
    assert samples[("practiceflow_events_waiting", key)] == 0
    assert samples[("practiceflow_runs", (("practice", PRACTICE), ("status", "succeeded")))] == 0
    assert samples[("practiceflow_store_up", ())] == 1
    # serve polls once at start (its catch-up), then every 60 s: the lag histogram is
    # there from the start, its samples from the first scheduled poll on.
    text = requests.get(f"{serve}/metrics", timeout=30).text
    families = {family.name for family in text_string_to_metric_families(text)}
    assert "practiceflow_poll_lag_seconds" in families
