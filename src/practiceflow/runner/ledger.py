"""The completeness ledger (``practiceflow audit completeness``), read from the store only: per
practice and trigger, the events stored (``received`` by webhook, ``polled``, ``recovered``
by a sweep; test and held deliveries apart as ``held``), those that ``ran`` (a run
succeeded) or not, and the gap entries of the attention table (``missing``: not closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from practiceflow.state import EventRecord, StateStore
from practiceflow.state.attention_rows import AttentionRecord


@dataclass
class TriggerLedger:
    """What the ledger says about one trigger of one practice."""

    practice: str
    trigger: str
    seen: int = 0
    received: int = 0
    polled: int = 0
    recovered: int = 0
    held: int = 0
    ran: int = 0
    not_ran: list[str] = field(default_factory=list)
    missing: int = 0
    gaps: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The JSON form (``audit completeness --json``)."""
        return asdict(self)


def _how(event: EventRecord) -> str:
    """``test``, ``sweep``, ``webhook`` or ``poll``: how an event came in."""
    stored = event.payload if isinstance(event.payload, Mapping) else {}
    if stored.get("test"):
        return "test"
    if stored.get("sweep"):
        return "sweep"
    return "webhook" if stored.get("source") == "webhook" else "poll"


def _gap(entry: AttentionRecord) -> dict[str, Any]:
    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat(timespec="seconds")

    return {
        "id": entry.attention_id,
        "window": [iso(entry.window_start), iso(entry.window_end)],
        "status": entry.status,
        "settled_by": entry.settled_by,
        "why": entry.note if entry.status == "closed" else entry.reason,
        "evidence": entry.evidence,
    }


def completeness(
    store: StateStore, since: datetime, practice: str | None = None
) -> list[TriggerLedger]:
    """The ledger of every trigger that received something or had a gap since ``since``, sorted."""
    rows: dict[tuple[str, str], TriggerLedger] = {}

    def row(practice_key: str, trigger: str) -> TriggerLedger:
        return rows.setdefault((practice_key, trigger), TriggerLedger(practice_key, trigger))

    runs: dict[tuple[str, str], set[str]] = {}
    for run in store.list_runs(practice=practice, since=since, limit=1_000_000):
        runs.setdefault((run.practice, run.event_id), set()).add(run.status)
    for event in store.ledger_events(since, practice=practice):
        ledger = row(event.practice, event.source)
        how = _how(event)
        if how == "test":
            ledger.held += 1
            continue
        ledger.seen += 1
        if how == "webhook":
            ledger.received += 1
        elif how == "sweep":
            ledger.recovered += 1
        else:
            ledger.polled += 1
        if "succeeded" in runs.get((event.practice, event.event_id), set()):
            ledger.ran += 1
        else:
            ledger.not_ran.append(event.event_id)
    for entry in store.list_attention(practice=practice, kind="gap", limit=100_000):
        if entry.window_end is not None and entry.window_end < since:
            continue
        ledger = row(entry.practice, entry.trigger)
        ledger.gaps.append(_gap(entry))
        if entry.status != "closed":
            ledger.missing += 1
    return [rows[key] for key in sorted(rows)]
