"""The completeness ledger: per practice and trigger, what arrived, how, what ran, and the
windows nobody was listening, with what proved them complete.

Read from the state store only (``practiceflow audit completeness``): the events received
since a moment (by webhook, by a poll, or recovered by a sweep after a downtime:
:mod:`.sweep`), the runs of those events, and the gap entries of the attention table
(:mod:`practiceflow.service.needs_person`). Counts:

* ``seen``: events stored (test deliveries and deliveries held without running apart:
  ``held``);
* ``received``: by webhook; ``polled``: by a poll; ``recovered``: by a sweep;
* ``ran``: events with a run that succeeded; ``not_ran``: the others (waiting, failed, held
  for a person), by event id;
* ``missing``: windows not proven complete (gaps open for a person, or still being
  checked); each gap says why, or the evidence that closed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from practiceflow.state import EventRecord, StateStore
from practiceflow.state.attention_rows import AttentionRecord

__all__ = ["TriggerLedger", "completeness"]


@dataclass
class TriggerLedger:
    """What the ledger says about one trigger of one practice (module docstring)."""

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
    """The ledger of every trigger that received something or had a gap since ``since``.

    Args:
        store: the state store.
        since: where the ledger starts.
        practice: only this practice (every one by default).

    Returns:
        One row per (practice, trigger), sorted.
    """
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
