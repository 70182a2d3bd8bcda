"""Webhook subscriptions and signed deliveries (spec 2.8 and 6) to a local receiver."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import subprocess
import time

import pytest

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

KEY = "11111111-1111-4111-8111-111111111111"


def _subscribe(api, url: str, event: str, spelling: str = "hookUrl") -> dict:
    response = api.post(
        "/api/v1/webhooks", {spelling: url, "webhookEvent": event, "webhookSecret": "ignored"}
    )
    assert response.status_code == 201, response.text
    return response.json()


def _accept_a_proposal(sandbox: SandboxHandle) -> dict:
    proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
    return sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")


def _expected_signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def _wait(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_subscribe_returns_the_generated_secret_once(api, receiver) -> None:
    created = _subscribe(api, receiver.url, "proposal.accepted", spelling="targetUrl")
    assert set(created) >= {"id", "url", "event", "webhookSecret"}
    assert created["webhookSecret"] != "ignored"
    assert created["url"] == receiver.url
    listed = api.get("/api/v1/webhooks").json()
    assert listed
    assert all("webhookSecret" not in row and "secret" not in row for row in listed)
    assert "webhookSecret" not in api.get(f"/api/v1/webhooks/{created['id']}").json()


def test_events_list_names_the_spec_events(api) -> None:
    events = api.get("/api/v1/webhooks/events").json()
    assert {"proposal.accepted", "eform.submitted"} <= set(events)


@pytest.mark.parametrize(
    "body",
    [
        {"webhookEvent": "proposal.accepted"},
        {"hookUrl": "http://127.0.0.1:9/x", "webhookEvent": "nope.event"},
        {"hookUrl": "https://example.com/hook", "webhookEvent": "proposal.accepted"},
    ],
    ids=["no url", "unknown event", "not loopback"],
)
def test_subscribe_validation(api, body) -> None:
    response = api.post("/api/v1/webhooks", body)
    assert response.status_code == 400
    assert response.json()["message"]


def test_unsubscribe_and_404(api, receiver) -> None:
    created = _subscribe(api, receiver.url, "eform.submitted")
    assert api.request("DELETE", f"/api/v1/webhooks/{created['id']}").status_code == 200
    assert api.request("DELETE", f"/api/v1/webhooks/{created['id']}").status_code == 404
    assert api.post(f"/api/v1/webhooks/{KEY}/test").status_code == 404


def test_accepted_proposal_is_delivered_signed(sandbox: SandboxHandle, api, receiver) -> None:
    created = _subscribe(api, receiver.url, "proposal.accepted")
    accepted = _accept_a_proposal(sandbox)
    _wait(lambda: len(receiver.received) == 1)
    delivery = receiver.received[0]
    headers = {name.lower(): value for name, value in delivery.headers.items()}
    assert headers["x-svc-event"] == "proposal.accepted"
    assert headers["x-svc-event-id"] == accepted["eventId"]
    assert abs(int(headers["x-svc-timestamp"]) - time.time()) < 60
    expected = _expected_signature(
        created["webhookSecret"], headers["x-svc-timestamp"], delivery.body
    )
    assert hmac.compare_digest(headers["x-svc-signature"], expected)
    payload = json.loads(delivery.body)
    assert payload["event"] == "proposal.accepted"
    assert payload["eventId"] == accepted["eventId"]
    assert payload["data"]["proposalKey"] == accepted["proposal"]["proposalKey"]
    assert payload["data"]["entityKey"] == accepted["proposal"]["entityKey"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_signature_matches_openssl(sandbox: SandboxHandle, api, receiver) -> None:
    created = _subscribe(api, receiver.url, "proposal.accepted")
    _accept_a_proposal(sandbox)
    _wait(lambda: len(receiver.received) == 1)
    delivery = receiver.received[0]
    timestamp = delivery.headers["X-Svc-Timestamp"]
    result = subprocess.run(  # noqa: S603 - openssl with a test secret, no shell
        ["openssl", "dgst", "-sha256", "-hmac", created["webhookSecret"]],  # noqa: S607
        input=timestamp.encode() + b"." + delivery.body,
        capture_output=True,
        check=True,
    )
    hex_digest = result.stdout.decode().strip().split()[-1]
    assert delivery.headers["X-Svc-Signature"] == "sha256=" + hex_digest


def test_submitted_eform_is_delivered(sandbox: SandboxHandle, api, receiver) -> None:
    _subscribe(api, receiver.url, "eform.submitted")
    form = api.post(
        "/api/v1/eforms/send",
        {"templateId": 101, "recipient": {"name": "A", "email": "a@example.com"}},
    ).json()
    sandbox.admin("POST", f"/_admin/eforms/{form['formKey']}/submit")
    _wait(lambda: len(receiver.received) == 1)
    assert json.loads(receiver.received[0].body)["data"]["formKey"] == form["formKey"]


def test_failed_deliveries_are_retried_then_never_repeated(
    sandbox: SandboxHandle, api, receiver
) -> None:
    receiver.statuses.extend([500, 503])
    _subscribe(api, receiver.url, "proposal.accepted")
    accepted = _accept_a_proposal(sandbox)
    log = sandbox.wait_for_deliveries(3)
    assert [(row["attempt"], row["status"], row["ok"]) for row in log] == [
        (1, 500, False),
        (2, 503, False),
        (3, 200, True),
    ]
    assert {row["eventId"] for row in log} == {accepted["eventId"]}
    ids = {r.headers["X-Svc-Event-Id"] for r in receiver.received}
    assert ids == {accepted["eventId"]}
    time.sleep(0.3)  # longer than the remaining scaled schedule
    assert len(receiver.received) == 3
    assert len(sandbox.admin("GET", "/_admin/deliveries")) == 3


def test_unreachable_receiver_is_retried_on_schedule_then_given_up(sandbox, api) -> None:
    _subscribe(api, "http://127.0.0.1:9/closed", "proposal.accepted")
    _accept_a_proposal(sandbox)
    log = sandbox.wait_for_deliveries(5)
    time.sleep(0.2)
    log = sandbox.admin("GET", "/_admin/deliveries")
    assert [row["attempt"] for row in log] == [1, 2, 3, 4, 5]
    assert all(row["status"] is None and row["error"] for row in log)
    assert log[-1]["willRetry"] is False


def test_test_delivery_and_duplicate_mode(sandbox: SandboxHandle, api, receiver) -> None:
    created = _subscribe(api, receiver.url, "eform.submitted")
    queued = api.post(f"/api/v1/webhooks/{created['id']}/test").json()
    _wait(lambda: len(receiver.received) == 1)
    assert receiver.received[0].headers["X-Svc-Event-Id"] == queued["eventId"]
    assert json.loads(receiver.received[0].body)["data"]["isTest"] is True
    sandbox.admin("POST", "/_admin/config", {"duplicateDeliveries": 3})
    api.post(f"/api/v1/webhooks/{created['id']}/test")
    form = api.post(
        "/api/v1/eforms/send",
        {"templateId": 101, "recipient": {"name": "A", "email": "a@example.com"}},
    ).json()
    event = sandbox.admin("POST", f"/_admin/eforms/{form['formKey']}/submit")["eventId"]
    _wait(lambda: sum(r.headers["X-Svc-Event-Id"] == event for r in receiver.received) == 3)


def test_other_regions_subscriptions_are_not_notified(sandbox, make_api, receiver) -> None:
    _subscribe(make_api(region="uk"), receiver.url, "proposal.accepted")
    _accept_a_proposal(sandbox)
    time.sleep(0.2)
    assert receiver.received == []
