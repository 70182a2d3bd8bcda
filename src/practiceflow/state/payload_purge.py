"""Retention: the payloads of finished runs removed once they are older than a cutoff.

Every row stays (status, ids, times); what may hold personal data goes: run origins, step
requests and outputs, and the payloads of events whose runs have all finished (an event a
run may still need keeps its payload). Errors stay: they are masked before being stored.
"""

from __future__ import annotations

import json
from typing import Any, Final

from practiceflow.state._dialect import SQLConnection

#: The run statuses that end a run: nothing of it runs or is held for a person any more.
FINISHED: Final = ("succeeded", "failed", "cancelled")
#: The key a purged event payload carries (with its ``source``, kept in clear).
PURGED: Final = "$purged"

#: Runs finished before the cutoff that still hold a payload.
_TO_PURGE: Final = (
    "SELECT run_id FROM {p}runs r WHERE r.status IN ('succeeded', 'failed', 'cancelled')"
    " AND r.updated_at < ? AND (r.origin IS NOT NULL OR EXISTS (SELECT 1 FROM {p}steps s"
    " WHERE s.run_id = r.run_id AND (s.request IS NOT NULL OR s.output IS NOT NULL)))"
)
#: Events handled before the cutoff, with a run, and no run of them unfinished or recent.
_EVENTS: Final = (
    "SELECT e.seq, e.payload FROM {p}events e WHERE e.handled_at IS NOT NULL"
    " AND e.received_at < ? AND EXISTS (SELECT 1 FROM {p}runs r WHERE"
    " r.practice = e.practice AND r.event_id = e.event_id) AND NOT EXISTS (SELECT 1"
    " FROM {p}runs r WHERE r.practice = e.practice AND r.event_id = e.event_id AND"
    " (r.status NOT IN ('succeeded', 'failed', 'cancelled') OR r.updated_at >= ?))"
)


def purge_finished(db: SQLConnection, cutoff: Any) -> int:
    """Remove the payloads of the runs finished before ``cutoff`` (as the dialect stores a
    time), in ``db``'s write transaction; the number of runs purged (again: 0 more)."""
    purged = [row[0] for row in db.execute(_TO_PURGE, (cutoff,)).fetchall()]
    for run_id in purged:
        db.execute("UPDATE {p}runs SET origin = NULL WHERE run_id = ?", (run_id,))
        db.execute("UPDATE {p}steps SET request = NULL, output = NULL WHERE run_id = ?", (run_id,))
    events = db.execute(_EVENTS, (cutoff, cutoff)).fetchall()
    emptied = []
    for seq, stored in events:
        payload = db.dialect.load_json(stored)
        if isinstance(payload, dict) and PURGED in payload:
            continue
        kept: dict[str, Any] = {PURGED: True}
        if isinstance(payload, dict) and isinstance(payload.get("source"), str):
            kept["source"] = payload["source"]
        emptied.append((json.dumps(kept, sort_keys=True), seq))
    db.executemany("UPDATE {p}events SET payload = ? WHERE seq = ?", emptied)
    return len(purged)
