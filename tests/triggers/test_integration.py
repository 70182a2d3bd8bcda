"""The issue's "done means", against the sandbox over real HTTP on 127.0.0.1."""

from __future__ import annotations

import pytest

from practiceflow.state import SQLiteStore
from practiceflow.triggers import Poller, build_trigger, load_definition

pytestmark = pytest.mark.integration

ALL_CHANGES = """\
key: every_entity_change
title: Every entity change
description: Test module - each change of any entity fires once.
noun: Client
poll:
  path: /api/v1/entities/list
  cursor: {kind: lastUpdated, field: lastUpdated}
  dedupe: "{{ item.entityKey }}@{{ item.lastUpdated }}"
output:
  schema: {type: object, additionalProperties: true, properties: {}}
sample: {}
"""


def _proposal(sandbox):
    return sandbox.admin("GET", "/_admin/records/proposals")[0]


def test_accepted_proposal_arrives_by_webhook_and_is_stored_once_of_three(
    sandbox, store, client, receiver, served
):
    trigger = build_trigger(
        load_definition("proposal_accepted"),
        mode="auto",
        practice="p",
        store=store,
        client=client,
        receiver=receiver,
        public_url=served.url,
    )
    trigger.start()
    sandbox.admin("POST", "/_admin/config", {"duplicateDeliveries": 3})
    proposal = _proposal(sandbox)
    sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
    # Delivery latency is a benchmark figure (bench/), not a test's: wait for the event.
    assert receiver.wait_for_events(1, timeout=60)
    sandbox.wait_for_deliveries(3)
    events = trigger.pending()
    assert [e.id for e in events] == [f"proposal:{proposal['proposalKey']}"]
    assert events[0].payload["entityKey"] == proposal["entityKey"]
    assert events[0].source == "webhook"
    trigger.acknowledge(events[0])
    trigger.stop()
    assert store.list_subscriptions() == []
    assert sandbox.admin("GET", "/_admin/records/subscriptions") == []


def test_check_sends_the_test_delivery_and_heals_a_vanished_subscription(
    sandbox, store, client, receiver, served
):
    trigger = build_trigger(
        load_definition("proposal_accepted"),
        mode="webhook",
        practice="p",
        store=store,
        client=client,
        receiver=receiver,
        public_url=served.url,
    )
    trigger.start()
    assert trigger.check(wait=2.0).status == "arrived"  # type: ignore[attr-defined]
    assert trigger.pending() == []  # the test delivery is not a practice event
    old = store.get_subscription("p", "proposal_accepted")
    assert old is not None
    client.delete(f"/api/v1/webhooks/{old.subscription_id}")  # it vanishes behind our back
    assert trigger.check(wait=0.5).status == "missing"  # type: ignore[attr-defined]
    assert trigger.heal() == "resubscribed"  # type: ignore[attr-defined]
    new = store.get_subscription("p", "proposal_accepted")
    assert new is not None
    assert new.subscription_id != old.subscription_id
    trigger.stop()


def test_mode_both_fires_a_change_once_across_webhook_and_poll(
    sandbox, store, client, receiver, served
):
    proposal = _proposal(sandbox)
    trigger = build_trigger(
        load_definition("proposal_accepted"),
        mode="both",
        options={"entityKey": proposal["entityKey"]},
        practice="p",
        store=store,
        client=client,
        receiver=receiver,
        public_url=served.url,
    )
    trigger.start()
    assert trigger.poll_once().baseline  # type: ignore[attr-defined]
    sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
    assert receiver.wait_for_events(1, timeout=60)
    assert trigger.poll_once().events == []  # type: ignore[attr-defined]
    assert [e.source for e in trigger.pending()] == ["webhook"]
    trigger.stop()


def test_a_thousand_entities_changed_in_bursts_are_each_seen_once_across_a_restart(
    sandbox, tmp_path, client
):
    sandbox.admin("POST", "/_admin/reset", {"entities": 1000})
    module = tmp_path / "triggers" / "every_entity_change.yaml"
    module.parent.mkdir()
    module.write_text(ALL_CHANGES)
    definition = load_definition(str(module))
    keys = [row["entityKey"] for row in sandbox.admin("GET", "/_admin/records/entities")]
    assert len(keys) == 1000
    seen: list[str] = []
    db = tmp_path / "state.db"
    store = SQLiteStore(db)
    poller = Poller(client, store, "p", definition)
    assert poller.poll_once().events == []  # from now: history does not fire
    for number, burst in enumerate([keys[:300], keys[300:450], keys[450:800], keys[800:]]):
        for key in burst:
            sandbox.admin("PATCH", f"/_admin/entities/{key}", {"email": f"b{number}@example.com"})
        if number == 2:  # restart in the middle: a new poller over the same database
            store.close()
            store = SQLiteStore(db)
            poller = Poller(client, store, "p", definition)
        seen += [event.raw["entityKey"] for event in poller.poll_once().events]
        seen += [event.raw["entityKey"] for event in poller.poll_once().events]
    store.close()
    assert len(seen) == 1000
    assert sorted(seen) == sorted(keys)


@pytest.mark.parametrize("skew", [3600, -3600, 0])
def test_clock_skew_never_causes_a_future_cursor_400(sandbox, store, client, skew):
    sandbox.admin("POST", "/_admin/clock", {"offset": skew})  # server ahead of / behind us
    poller = Poller(client, store, "p", load_definition("updated_client"))
    assert poller.poll_once().baseline
    rows = sandbox.admin("GET", "/_admin/records/entities")
    key = next(row["entityKey"] for row in rows if row["status"] == "Active")
    sandbox.admin("PATCH", f"/_admin/entities/{key}", {"email": "skew@example.com"})
    found = poller.poll_once()  # the cursor is the server's own stamp, never our clock
    assert [e.raw["entityKey"] for e in found.events] == [key]
    assert poller.poll_once().events == []
    statuses = {row["status"] for row in sandbox.admin("GET", "/_admin/requests")}
    assert 400 not in statuses
