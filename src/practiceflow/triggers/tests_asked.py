"""Test deliveries told apart without any marker in the body: the spec does not show one,
but we know when we asked (:func:`note_asked`, before ``/test`` is sent). While an id-less
test is awaited, any other delivery is held as unrecognised (it may be the test), as is one
the trigger cannot map: stored, never run, listed for a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from practiceflow.hooks import tolerant
from practiceflow.state import StateStore, SubscriptionHealth

#: How long after asking an id-less test delivery is awaited.
AWAIT_TEST: Final = timedelta(minutes=10)


def note_asked(store: StateStore, practice: str, trigger: str, answer: Any = None) -> None:
    """Remember that a test delivery was asked for now: call it with ``answer=None`` before
    sending ``/test``, then with the answer (its event id, when known)."""
    if answer is None:
        store.set_test_asked(practice, trigger, store.now(), None)
        return
    asked = store.subscription_health(practice, trigger).test_asked_at
    event_id = tolerant.field(answer, "eventId")[1]
    if asked is not None and isinstance(event_id, str | int) and str(event_id):
        store.set_test_asked(practice, trigger, asked, str(event_id))
        _release(store, practice, trigger, str(event_id))


def _release(store: StateStore, practice: str, trigger: str, delivery_id: str) -> None:
    """Close the entry of a delivery held while the answer was on its way, now proven
    the test by the answer's id."""
    # Imported here: the runner's package imports the triggers.
    from practiceflow.service.needs_person import release_delivery

    release_delivery(store, practice, trigger, delivery_id)


def classify(
    health: SubscriptionHealth,
    now: datetime,
    event_id: str,
    body: Any,
    mapped: bool,
) -> tuple[bool, str | None]:
    """Tell a test delivery ``(True, None)``, an unrecognised one ``(True, reason)`` and an
    event to run ``(False, None)`` apart, from the subscription's health (when a test was
    asked for, its event id) and whether the mapping found a record key (``mapped``)."""
    data = body.get("data") if isinstance(body, Mapping) else None  # ``isTest: true`` marks one
    if any(isinstance(part, Mapping) and part.get("isTest") is True for part in (body, data)):
        return True, None
    when = health.test_asked_at
    if when is not None:
        if event_id == health.test_event_id:
            return True, None
        awaited = now - when <= AWAIT_TEST
        if awaited and health.test_event_id is None:
            reason = (
                "arrived while a test delivery without an event id was awaited: it may be "
                "that test delivery, so it was not run; check the practice and rerun if not"
            )
            return True, reason
    if not mapped:
        return True, "the trigger could not map it to a record (no record key); not run"
    return False, None


def arrived(store: StateStore, practice: str, trigger: str) -> None:
    """Note that the awaited test delivery (or what may be it) arrived."""
    if store.subscription_health(practice, trigger).test_asked_at is not None:
        store.set_test_asked(practice, trigger, None, None)


def hold(
    store: StateStore, practice: str, trigger: str, event_key: str, delivery_id: str, reason: str
) -> str:
    """Make a held delivery visible as an entry needing attention; returns its id (the
    same one for a repeated delivery)."""
    from practiceflow.service.needs_person import hold_delivery

    entry_id, created = hold_delivery(store, practice, trigger, event_key, delivery_id, reason)
    if created:
        health = store.subscription_health(practice, trigger)
        if health.test_asked_at is not None and delivery_id == health.test_event_id:
            # the answer came first
            _release(store, practice, trigger, delivery_id)
    return entry_id
