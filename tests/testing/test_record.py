"""``practiceflow test --record``: recorded against a sandbox, replayed with the network off,
the same result; the cassette holds no secret and no ``x-pii`` value (planted canaries)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from practiceflow.api import Client
from practiceflow.cli import cli
from practiceflow.testing import (
    SandboxHandle,
    Server,
    load_test_file,
    record_case,
    run_case,
)

pytestmark = pytest.mark.integration

CANARY_NAME = "Canaryname Qzxwvjk"
CANARY_EMAIL = "canary.pii.7f3k@example.org"
CANARY_PHONE = "0491 570 156"

RECIPE = """\
name: canary client -> bill
trigger: {use: new_client}
vars: {fee: 120}
steps:
  - id: client
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDetails: "Welcome {{ steps.client.entityName }}"
      lineItems: [{amount: "{{ vars.fee }}", taxPercent: 10, narration: Welcome fee}]
"""

TEST = """\
recipe: canary.yaml
cases:
  - name: the canary client is read and billed
    given:
      event: {{entityKey: {key}, entityName: {name}, email: {email}}}
      now: "2026-11-27T09:00:00Z"
      cassette: cassettes/canary.yaml
    expect:
      status: succeeded
      steps:
        client: {{status: succeeded, output: {{entityKey: {key}}}}}
        bill:
          status: succeeded
          request: {{method: POST, path: /api/v1/bills, body: {{lineItems: [{{amount: 120}}]}}}}
"""


def _canary_client(sandbox: SandboxHandle) -> str:
    client_id, secret = sandbox.credentials("anz", "rw")
    with Client(client_id, secret, base_url=sandbox.base_url("anz")) as api:
        body = {
            "entityType": "Individual",
            "clientStatus": "Active",
            "entityName": CANARY_NAME,
            "email": CANARY_EMAIL,
            "mobile": CANARY_PHONE,
        }
        created: Any = api.request("POST", "/api/v1/entities", json=body)
    return str(created.data["entityKey"])


@pytest.fixture
def canary_test(sandbox: SandboxHandle, tmp_path: Path) -> Path:
    key = _canary_client(sandbox)
    (tmp_path / "canary.yaml").write_text(RECIPE)
    path = tmp_path / "canary.test.yaml"
    path.write_text(TEST.format(key=key, name=f'"{CANARY_NAME}"', email=CANARY_EMAIL))
    return path


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)


def test_record_then_replay_offline_gives_the_same_result(
    canary_test: Path, sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = load_test_file(canary_test)
    client_id, secret = sandbox.credentials("anz", "rw")
    where = Server(sandbox.base_url("anz"), client_id, secret)
    cassette, live, replayed = record_case(test, test.cases[0], where)
    assert live.status == replayed.status == "succeeded"
    assert {k: v.status for k, v in live.steps.items()} == {
        k: v.status for k, v in replayed.steps.items()
    }
    sent_live = [(r.step, r.request.method, r.request.path) for r in live.requests]
    sent_replayed = [(r.step, r.request.method, r.request.path) for r in replayed.requests]
    assert sent_live == sent_replayed
    assert live.steps["bill"].output["billTotal"] == replayed.steps["bill"].output["billTotal"]

    _no_network(monkeypatch)
    again = run_case(test, test.cases[0])
    assert again.status == "succeeded"
    assert not again.problems
    assert cassette.exists()


def test_the_cassette_holds_no_secret_and_no_personal_canary(
    canary_test: Path, sandbox: SandboxHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    client_id, secret = sandbox.credentials("anz", "rw")
    env = {
        "PRACTICEFLOW_CLIENT_ID": client_id,
        "PRACTICEFLOW_CLIENT_SECRET": secret,
        "PRACTICEFLOW_PROFILES": str(canary_test.parent / "no-profiles.toml"),
    }
    url = sandbox.base_url("anz")
    result = CliRunner().invoke(
        cli, ["test", "--record", "--base-url", url, str(canary_test)], env=env
    )
    assert result.exit_code == 0, result.output
    assert "1 passed" in result.output
    text = (canary_test.parent / "cassettes" / "canary.yaml").read_text().lower()
    canaries = [secret, CANARY_NAME, *CANARY_NAME.split(), CANARY_EMAIL, CANARY_PHONE]
    assert [canary for canary in canaries if canary.lower() in text] == []
    assert "exchanges" in text  # the answers are there, scrubbed

    _no_network(monkeypatch)
    offline = CliRunner().invoke(cli, ["test", str(canary_test)], env=env)
    assert offline.exit_code == 0, offline.output
    assert "1 passed, 0 failed" in offline.output
