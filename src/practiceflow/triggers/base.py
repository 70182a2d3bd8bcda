"""The one interface every trigger has, and the events it hands to the runner.

A trigger (webhook, polling or both) writes each event it receives into the state store
*before* anything else happens (before a webhook is answered 2xx, before a polling cursor
moves). The runner then reads the pending events of a trigger with :meth:`Trigger.pending`
and acknowledges each with :meth:`Trigger.acknowledge` once it is handled.

Stored events are keyed by ``(practice, source, event_id)`` where ``source`` is the
trigger's name and ``event_id`` is the event's **dedupe key** (see :class:`TriggerEvent`).
The stored payload is an envelope::

    {"source": "webhook" | "poll", "data": <the mapped event>, "raw": <body or row>,
     "deliveryId": <X-Svc-Event-Id or null>, "event": <event key>, "test": <bool>}
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias

from practiceflow.state import EventRecord, StateStore

logger = logging.getLogger("practiceflow.triggers")

EventSource: TypeAlias = Literal["webhook", "poll"]
_SOURCES: Final = ("webhook", "poll")


@dataclass(frozen=True)
class TriggerEvent:
    """One event of a trigger, as the runner sees it.

    Attributes:
        id: the stored event id, unique per (practice, trigger name); runs are keyed on it.
        trigger: the trigger's name (its module key unless named otherwise).
        source: ``webhook`` or ``poll``: how it came in.
        dedupe_key: the key that makes the same change fire once, across sources. It is
            the same string as ``id``: for a webhook, the module's ``webhook.id`` template
            (when it renders) else ``delivery:<X-Svc-Event-Id>``; for a poll, the module's
            ``poll.dedupe`` template. Modules that receive both ways render the same key
            from both (e.g. ``proposal:<proposalKey>``).
        payload: the event, mapped by the module (what recipes read as ``trigger``).
        received_at: when it was stored (UTC).
        raw: the whole delivery body or list row, kept as received (shape not shown).
        delivery_id: the ``X-Svc-Event-Id`` of a webhook delivery, else ``None``.
        event: the event key (``proposal.accepted``) or, for polls, the trigger key.
        practice: the practice the event belongs to.
        is_test: a test delivery (``POST /api/v1/webhooks/{id}/test``), recognised
            best-effort from the body; never handed to recipes.
    """

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
    """The JSON-ready stored payload of an event (shape in the module docstring).

    ``test`` marks a delivery never run: a test, or one held with an ``unrecognised`` reason.
    """
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
    """Turn a stored event back into a :class:`TriggerEvent`.

    Records written by something else than a trigger (no envelope) are read tolerantly:
    the whole payload becomes the event.

    Args:
        record: a row of the state store.

    Returns:
        The event.
    """
    stored = record.payload
    is_envelope = isinstance(stored, dict) and stored.get("source") in _SOURCES
    if not is_envelope:
        return TriggerEvent(
            id=record.event_id,
            trigger=record.source,
            source="webhook" if record.signature else "poll",
            dedupe_key=record.event_id,
            payload=stored,
            received_at=record.received_at,
            raw=stored,
            event=record.event_key,
            practice=record.practice,
        )
    source: EventSource = "webhook" if stored["source"] == "webhook" else "poll"
    return TriggerEvent(
        id=record.event_id,
        trigger=record.source,
        source=source,
        dedupe_key=record.event_id,
        payload=stored.get("data"),
        received_at=record.received_at,
        raw=stored.get("raw"),
        delivery_id=stored.get("deliveryId"),
        event=str(stored.get("event") or record.event_key),
        practice=record.practice,
        is_test=bool(stored.get("test")),
    )


def persist(
    store: StateStore,
    practice: str,
    name: str,
    dedupe_key: str,
    payload: dict[str, Any],
    *,
    event: str,
    signature: str | None = None,
) -> bool:
    """Store one event unless its dedupe key (or signature) was seen, in one transaction.

    Returns ``True`` when stored, ``False`` for a duplicate.
    """
    return store.record_event(practice, name, event, dedupe_key, payload, signature=signature)


class Trigger(ABC):
    """A source of events for one recipe trigger: webhook, polling, or both.

    Subclasses start receiving in :meth:`start` and stop in :meth:`stop`; every event they
    receive is in the state store before it is acknowledged to its sender. The runner
    consumes them with :meth:`pending` and :meth:`acknowledge`.

    Attributes:
        name: the trigger's name (the store's ``source`` for its events).
        key: the trigger module's key.
        practice: the practice it works for.
        store: the state store.
    """

    def __init__(self, name: str, key: str, practice: str, store: StateStore) -> None:
        self.name = name
        self.key = key
        self.practice = practice
        self.store = store

    @property
    @abstractmethod
    def mode(self) -> str:
        """``webhook``, ``poll`` or ``both``."""

    @abstractmethod
    def start(self) -> None:
        """Begin receiving (subscribe, prime the cursor); safe to call again."""

    @abstractmethod
    def stop(self, *, unsubscribe: bool = True) -> None:
        """Stop receiving; on a clean shutdown, also remove what :meth:`start` created."""

    def pending(self, limit: int = 100) -> list[TriggerEvent]:
        """Events of this trigger not yet acknowledged, oldest first.

        Test deliveries are acknowledged here and left out: they prove the path works,
        they are not practice events.

        Args:
            limit: at most this many.

        Returns:
            The events to hand to the runner.
        """
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
