"""Seeded data is reproducible, and the sandbox scales to 100,000 entities per region."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import requests

from practiceflow.sandbox.config import DEFAULT_CREDENTIALS, SandboxConfig
from practiceflow.testing import SandboxHandle, running_sandbox

pytestmark = pytest.mark.integration


def _session(sandbox: SandboxHandle) -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    client_id, secret = sandbox.credentials()
    session.headers.update({"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret})
    return session


def _snapshot(sandbox: SandboxHandle) -> list:
    session = _session(sandbox)
    base = sandbox.base_url()
    return [
        session.get(base + "/api/v1/entities", params={"pageNumber": 2}, timeout=10).json(),
        session.get(base + "/api/v1/groups/list?includeMembers=true", timeout=10).json(),
        sandbox.admin("GET", "/_admin/records/proposals"),
        session.get(base + "/api/v1/users/list", timeout=10).json(),
        session.get(base + "/api/v1/bills/list", timeout=10).json(),
    ]


def test_the_same_seed_gives_the_same_data_and_another_seed_does_not(sandbox) -> None:
    first = _snapshot(sandbox)
    with running_sandbox(seed=1) as other:
        assert _snapshot(other) == first
    sandbox.admin("POST", "/_admin/reset", {"seed": 2})
    assert _snapshot(sandbox) != first
    sandbox.admin("POST", "/_admin/reset")
    assert _snapshot(sandbox) == first


def test_reset_discards_changes(sandbox, api) -> None:
    api.post("/api/v1/entities", {"entityType": "CO", "entityName": "Temporary"})
    sandbox.admin("POST", "/_admin/reset")
    names = {row["entityName"] for row in sandbox.admin("GET", "/_admin/records/entities")}
    assert "Temporary" not in names


def test_default_credentials_are_documented_constants() -> None:
    anz = DEFAULT_CREDENTIALS["anz"]
    assert anz["rw"].client_id == "5a4db0c0-0000-4000-8000-000000000011"
    assert anz["rw"].secret == "sandbox-anz-rw-secret"
    assert (anz["ro"].can_write, anz["inactive"].active) == (False, False)
    ids = {c.client_id for kinds in DEFAULT_CREDENTIALS.values() for c in kinds.values()}
    assert len(ids) == 9


def test_client_id_and_secret_can_be_overridden(monkeypatch) -> None:
    monkeypatch.setenv("PRACTICEFLOW_SANDBOX_CLIENT_ID", "my-id")
    monkeypatch.setenv("PRACTICEFLOW_SANDBOX_CLIENT_SECRET", "my-secret")
    config = SandboxConfig.from_env()
    assert config.credentials("anz")["rw"].client_id == "my-id"
    with running_sandbox(client_id="abc", client_secret="def") as sandbox:
        assert sandbox.credentials() == ("abc", "def")
        assert (
            _session(sandbox)
            .get(sandbox.base_url() + "/api/v1/auth/validate", timeout=5)
            .status_code
            == 200
        )


def test_one_hundred_thousand_entities_seed_and_page_deep() -> None:
    with running_sandbox(entities=100_000) as sandbox:
        session = _session(sandbox)
        base = sandbox.base_url()
        first = session.get(base + "/api/v1/entities", timeout=120)  # seeds the region
        assert len(first.json()) == 100
        deep = session.get(base + "/api/v1/entities", params={"pageNumber": 1000}, timeout=10)
        assert len(deep.json()) == 100
        assert deep.json()[-1]["entityCode"] == "C100000"
        assert (
            session.get(base + "/api/v1/entities", params={"pageNumber": 1001}, timeout=10).json()
            == []
        )
        cut = deep.json()[50]["lastUpdated"]
        recent = session.get(base + "/api/v1/entities", params={"lastUpdated": cut}, timeout=10)
        assert len(recent.json()) == 50
        assert all(row["lastUpdated"] >= cut for row in recent.json())


def test_cli_refuses_a_host_that_is_not_loopback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "practiceflow", "sandbox", "--host", "0.0.0.0"],  # noqa: S104
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "loopback" in result.stderr


def test_cli_help_shows_an_example() -> None:
    from click.testing import CliRunner

    from practiceflow.cli import cli

    result = CliRunner().invoke(cli, ["sandbox", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.output
    assert "--entities" in result.output


def test_cli_starts_prints_credentials_and_stops_on_sigterm() -> None:
    import signal
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: S603 - our own CLI, fixed arguments
        [sys.executable, "-m", "practiceflow", "sandbox", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        session = requests.Session()
        session.trust_env = False
        client_id, secret = DEFAULT_CREDENTIALS["anz"]["rw"].client_id, "sandbox-anz-rw-secret"
        while True:
            try:
                response = session.get(
                    f"http://127.0.0.1:{port}/anz/api/v1/auth/validate",
                    auth=(client_id, secret),
                    timeout=2,
                )
                break
            except requests.ConnectionError:
                # A bound against a hang, not a speed target: start-up time is for bench/.
                assert process.poll() is None, "the sandbox exited"
                assert time.perf_counter() - started < 120, "the sandbox did not start"
                time.sleep(0.05)
        assert response.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}/anz" in output
    assert "sandbox-anz-rw-secret" in output
    assert "sandbox-admin-token" in output


def test_a_running_sandbox_is_ready_when_the_context_is_entered() -> None:
    with running_sandbox() as sandbox:
        assert (
            _session(sandbox)
            .get(sandbox.base_url() + "/api/v1/auth/validate", timeout=5)
            .status_code
            == 200
        )
