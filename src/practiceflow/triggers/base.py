"""The one interface every trigger has, and the events it hands to the runner.

A trigger stores each event before anything else happens (before a webhook is answered 2xx,
before a polling cursor moves), keyed by ``(practice, trigger name, dedupe key)``; the stored
payload is the envelope :func:`envelope` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

from practiceflow.state import EventRecord, StateStore

EventSource: TypeAlias = Literal["webhook", "poll"]
_SOURCES: Final = ("webhook", "poll")


@dataclass(frozen=True)
class TriggerEvent:
    """One event of a trigger, as the runner sees it. ``id``: its dedupe key, the module's
    ``webhook.id`` (else ``delivery:<X-Svc-Event-Id>``) or ``poll.dedupe``, the same from both
    sources; ``payload``: what recipes read as ``trigger``; a test (``is_test``) never runs."""

    id: str
    trigger: str
    source: EventSource
    dedupe_key: str
    payload: Any = field(repr=False)
    received_at: datetime
    raw: Any = field(default=None, repr=False)
    delivery_id: str | None = None
    event: str = ""
    practice: str = ""
    is_test: bool = False


def envelope(
    source: EventSource,
    data: Any,
    raw: Any,
    *,
    event: str,
    delivery_id: str | None = None,
    test: bool = False,
    unrecognised: str | None = None,
) -> dict[str, Any]:
    """The JSON-ready stored payload of an event: ``data`` the mapped event, ``raw`` the body
    or row; ``test`` marks one never run (a test, or one held with an ``unrecognised`` reason)."""
    stored = {
        "source": source,
        "data": data,
        "raw": raw,
        "event": event,
        "deliveryId": delivery_id,
        "test": test,
    }
    if unrecognised is not None:
        stored["unrecognised"] = unrecognised
    return stored


def event_from_record(record: EventRecord) -> TriggerEvent:
    """A stored event as a :class:`TriggerEvent` (a payload without an envelope, written
    by something else than a trigger, is the whole event)."""
    stored = record.payload
    if not (isinstance(stored, dict) and stored.get("source") in _SOURCES):
        source = "webhook" if record.signature else "poll"
        stored = {"source": source, "data": stored, "raw": stored}
    return TriggerEvent(
        id=record.event_id,
        trigger=record.source,
        source="webhook" if stored["source"] == "webhook" else "poll",
        dedupe_key=record.event_id,
        payload=stored.get("data"),
        received_at=record.received_at,
        raw=stored.get("raw"),
        delivery_id=stored.get("deliveryId"),
        event=str(stored.get("event") or record.event_key),
        practice=record.practice,
        is_test=bool(stored.get("test")),
    )


class Trigger:
    """A source of events for one recipe trigger (``mode``: ``webhook``, ``poll``, ``both``);
    the runner consumes them with :meth:`pending` and :meth:`acknowledge`. ``name`` is the
    store's ``source`` of its events, ``key`` its module's key."""

    mode: str

    def __init__(self, name: str, key: str, practice: str, store: StateStore) -> None:
        self.name = name
        self.key = key
        self.practice = practice
        self.store = store

    def start(self) -> None:
        """Begin receiving (subscribe, prime the cursor); safe to call again. Polls are
        driven from outside: a polling trigger has nothing to start."""

    def stop(self, *, unsubscribe: bool = True) -> None:
        """Stop receiving; on a clean shutdown, also remove what :meth:`start` created (a
        polling trigger's cursor stays where it is)."""

    def pending(self, limit: int = 100) -> list[TriggerEvent]:
        """At most ``limit`` events of this trigger not yet acknowledged, oldest first; test
        deliveries are acknowledged here and left out (they are not practice events)."""
        events: list[TriggerEvent] = []
        for record in self.store.pending_events(self.practice, limit, source=self.name):
            found = event_from_record(record)
            if found.is_test:
                self.acknowledge(found)
                continue
            events.append(found)
        return events

    def acknowledge(self, event: TriggerEvent) -> None:
        """Mark an event handled; it stays deduplicated for the store's retention."""
        self.store.mark_event_handled(self.practice, self.name, event.id)
