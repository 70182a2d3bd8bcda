"""Test deliveries are told apart without any marker, and what cannot be mapped is held.

The spec does not show how a test delivery is marked. The sandbox plays three answers
(variant ``test_marker``): ``isTest`` in ``data``, no marker and an empty ``data``, no
marker and made-up fields of the event. None of them may start a recipe, and a real event
after them must still arrive.
"""

from __future__ import annotations

import pytest

from practiceflow.state import SQLiteStore
from practiceflow.triggers import build_trigger, load_definition, tests_asked

pytestmark = pytest.mark.integration


def _trigger(store, client, receiver, served):
    return build_trigger(
        load_definition("proposal_accepted"),
        mode="webhook",
        practice="p",
        store=store,
        client=client,
        receiver=receiver,
        public_url=served.url,
    )


@pytest.mark.parametrize("marker", ["isTest", "none", "sample"])
@pytest.mark.parametrize("body", ["nested", "flat"])
def test_a_test_delivery_never_becomes_an_event_whatever_its_shape(
    sandbox, store, client, receiver, served, marker: str, body: str
):
    sandbox.admin(
        "POST", "/_admin/variants", {"set": {"test_marker": marker, "delivery_body": body}}
    )
    trigger = _trigger(store, client, receiver, served)
    trigger.start()
    try:
        assert trigger.check(wait=30.0).status == "arrived"  # type: ignore[attr-defined]
        assert trigger.pending() == []
        # Held while the /test answer was on its way, a delivery proven the test by the
        # answer's event id needs no person.
        assert not store.list_runs(status="in_doubt")
        # A real acceptance afterwards is an event, once.
        proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
        sandbox.admin("POST", f"/_admin/proposals/{proposal['proposalKey']}/accept")
        assert receiver.wait_for_events(2, timeout=60)
        assert [event.id for event in trigger.pending()] == [f"proposal:{proposal['proposalKey']}"]
    finally:
        trigger.stop()


def _classify(
    store: SQLiteStore, trigger: str, event_id: str, body: object
) -> tuple[bool, str | None]:
    """What the receiver asks of a mapped delivery, with the subscription's health."""
    health = store.subscription_health("p", trigger)
    return tests_asked.classify(health, store.now(), event_id, body, True)


def test_an_unmappable_delivery_is_held_visible_and_never_run(
    sandbox, store, client, receiver, served
):
    sandbox.admin("POST", "/_admin/variants", {"set": {"test_marker": "none"}})
    trigger = _trigger(store, client, receiver, served)
    trigger.start()
    try:
        record = store.get_subscription("p", "proposal_accepted")
        assert record is not None
        # A test delivery the project did not ask for (sent by someone else): no marker,
        # no record key, so the trigger cannot map it.
        client.post(f"/api/v1/webhooks/{record.subscription_id}/test")
        assert receiver.wait_for_events(1, timeout=60)
        assert trigger.pending() == []
        assert store.list_runs() == []  # runs hold recipe runs only
        (held,) = store.list_attention()
        assert (held.kind, held.trigger, held.status) == (
            "unrecognised",
            "proposal_accepted",
            "open",
        )
        assert "could not map" in held.reason
    finally:
        trigger.stop()


def test_while_an_id_less_test_is_awaited_a_delivery_is_held_not_run(tmp_path) -> None:
    with SQLiteStore(str(tmp_path / "s.db")) as store:
        tests_asked.note_asked(store, "p", "t")
        tests_asked.note_asked(store, "p", "t", {"queued": True})  # the answer has no id
        test, reason = _classify(store, "t", "e-1", {"data": {"k": 1}})
        assert test is True
        assert reason is not None
        assert "awaited" in reason
        tests_asked.arrived(store, "p", "t")
        assert _classify(store, "t", "e-2", {"data": {"k": 2}}) == (
            False,
            None,
        )
        # With an id in the answer, only that delivery is the test.
        tests_asked.note_asked(store, "p", "t")
        tests_asked.note_asked(store, "p", "t", {"eventId": "e-3"})
        assert _classify(store, "t", "e-4", {}) == (False, None)
        assert _classify(store, "t", "e-3", {}) == (True, None)
