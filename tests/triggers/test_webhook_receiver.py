"""The webhook receiver: refusals, dedupe by id and by signature, store before 2xx."""

from __future__ import annotations

import logging
import time

import pytest
import requests
from trigger_helpers import post_delivery

from practiceflow.triggers import Receiver, load_definition, serve_receiver
from practiceflow.webhooks import delivery_headers

SECRET = "whsec_test_secret_value"
TOKEN = "tok-abc"


@pytest.fixture
def hook(store, served, receiver):
    store.save_subscription(
        "p",
        "proposal_accepted",
        "sub-1",
        "proposal.accepted",
        served.url + "/hooks/" + TOKEN,
        SECRET,
        TOKEN,
        "active",
    )
    receiver.bind("p", "proposal_accepted", load_definition("proposal_accepted").webhook, {})
    return served.url + "/hooks/" + TOKEN


BODY = {"data": {"proposalKey": "p1", "entityKey": "e1"}}


@pytest.mark.parametrize(
    ("change", "status", "reason"),
    [
        ({"secret": "wrong"}, 401, "signature_mismatch"),
        ({"timestamp": int(time.time()) - 8 * 86400}, 401, "stale_timestamp"),
        ({"timestamp": int(time.time()) + 3600}, 401, "future_timestamp"),
    ],
)
def test_unverified_deliveries_are_refused_and_never_stored(store, hook, change, status, reason):
    answer = post_delivery(
        hook, change.get("secret", SECRET), BODY, timestamp=change.get("timestamp")
    )
    assert answer.status_code == status
    assert answer.json()["reason"] == reason
    assert store.pending_events("p") == []


def test_a_retry_signed_hours_ago_is_stored_once_and_its_replay_is_caught(store, hook):
    # Retry behaviour is not shown: a retry may keep its first timestamp and come hours
    # later. Within the replay window (dedupe retention) it is taken, once.
    hours_ago = int(time.time()) - 3 * 3600
    first = post_delivery(hook, SECRET, BODY, timestamp=hours_ago, event_id="late-1")
    assert first.status_code == 200
    assert first.headers["X-Practiceflow-Stored"] == "true"
    again = post_delivery(hook, SECRET, BODY, timestamp=hours_ago, event_id="late-2")
    assert again.status_code == 200
    assert again.headers["X-Practiceflow-Stored"] == "false"  # same signature: a replay
    assert len(store.pending_events("p")) == 1


def test_unknown_path_is_404_and_logged_without_the_token(store, hook, served, caplog):
    with caplog.at_level(logging.WARNING):
        answer = post_delivery(served.url + "/hooks/unknown-token-123", SECRET, BODY)
    assert answer.status_code == 404
    assert "unknown receiver path" in caplog.text
    assert "unknown-token-123" not in caplog.text
    assert SECRET not in caplog.text


def test_oversize_body_is_413_by_declared_length(store, served):
    small = Receiver(store, max_body=64)
    with serve_receiver(small) as server:
        answer = post_delivery(server.url + "/hooks/x", SECRET, {"pad": "x" * 200})
    assert answer.status_code == 413


def test_oversize_chunked_body_is_cut_off_while_reading(store):
    small = Receiver(store, max_body=64)
    store.save_subscription("p", "t", "s", "proposal.accepted", "u", SECRET, "tok", "active")

    def chunks():
        for _ in range(1000):
            yield b"x" * 1024

    with serve_receiver(small) as server:
        raw = b"{}"
        headers = delivery_headers(SECRET, "proposal.accepted", "e1", raw)
        answer = requests.post(
            server.url + "/hooks/tok", data=chunks(), headers=headers, timeout=10
        )
    assert answer.status_code == 413
    assert store.pending_events("p") == []


def test_the_same_delivery_three_times_is_stored_once(store, hook):
    answers = [post_delivery(hook, SECRET, BODY, event_id="evt-1") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.headers["X-Practiceflow-Stored"] for a in answers] == ["true", "false", "false"]
    assert {a.headers["X-Practiceflow-Event-Key"] for a in answers} == {"proposal:p1"}
    assert [a.content for a in answers] == [b"", b"", b""]
    events = store.pending_events("p")
    assert [e.event_id for e in events] == ["proposal:p1"]


def test_a_replay_under_a_fresh_event_id_is_caught_by_its_signature(store, hook):
    raw = b'{"note": "no key, so the delivery id is the dedupe key"}'
    headers = delivery_headers(SECRET, "proposal.accepted", "evt-1", raw)
    first = requests.post(hook, data=raw, headers=headers, timeout=5)
    headers["X-Svc-Event-Id"] = "evt-2"  # not covered by the HMAC
    replay = requests.post(hook, data=raw, headers=headers, timeout=5)
    stored = (first.headers["X-Practiceflow-Stored"], replay.headers["X-Practiceflow-Stored"])
    assert stored == ("true", "false")
    assert len(store.pending_events("p")) == 1


def test_the_event_is_stored_before_the_answer(store, hook):
    answer = post_delivery(hook, SECRET, BODY, event_id="evt-7")
    assert answer.status_code == 200
    # No waiting: the row is committed by the time the 200 arrives.
    record = store.get_event("p", "proposal_accepted", "proposal:p1")
    assert record is not None
    assert record.payload["deliveryId"] == "evt-7"
    assert record.payload["data"]["entityKey"] == "e1"
    assert record.signature is not None


def test_a_test_delivery_records_its_time(store, hook):
    assert store.subscription_health("p", "proposal_accepted").last_test_delivery_at is None
    post_delivery(hook, SECRET, BODY, event_id="evt-real")
    assert store.subscription_health("p", "proposal_accepted").last_test_delivery_at is None
    test_body = {"isTest": True, "data": {"proposalKey": "p2", "entityKey": "e1"}}
    answer = post_delivery(hook, SECRET, test_body, event_id="evt-test")
    assert answer.status_code == 200
    health = store.subscription_health("p", "proposal_accepted")
    assert health.last_test_delivery_at is not None
    assert health.last_delivery_at is not None


def test_a_replaced_secret_and_a_deleted_path_take_effect_at_the_next_delivery(store, hook, served):
    assert post_delivery(hook, SECRET, BODY, event_id="evt-1").status_code == 200
    store.save_subscription(
        "p", "proposal_accepted", "sub-1", "proposal.accepted", hook, "whsec_new", TOKEN, "active"
    )
    other = {"data": {"proposalKey": "p2", "entityKey": "e1"}}
    old = post_delivery(hook, SECRET, other, event_id="evt-2")
    assert (old.status_code, old.json()["reason"]) == (401, "signature_mismatch")
    assert post_delivery(hook, "whsec_new", other, event_id="evt-3").status_code == 200
    store.delete_subscription("p", "proposal_accepted")
    gone = {"data": {"proposalKey": "p3", "entityKey": "e1"}}
    assert post_delivery(hook, "whsec_new", gone, event_id="evt-4").status_code == 404
    assert [e.event_id for e in store.pending_events("p")] == ["proposal:p1", "proposal:p2"]
