"""No silent gaps: on start, the window since the last heartbeat is listed for each trigger not
caught up by polling: ``checking`` where a sweep can prove it complete (:mod:`.sweep`), else
``open`` for a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from practiceflow.service.heartbeat import Heartbeat, last_alive, mark_alive
from practiceflow.service.needs_person import list_gap
from practiceflow.service.sweep import can_sweep
from practiceflow.state import StateStore
from practiceflow.triggers.definition import TriggerDefinition

__all__ = ["Heartbeat", "last_alive", "mark_alive"]


def note_downtime(
    store: StateStore,
    practice: str,
    triggers: Sequence[tuple[str, TriggerDefinition, bool]],
    *,
    now: datetime | None = None,
) -> list[str]:
    """List the downtime window for each trigger that may have missed events; returns the ids."""
    start = last_alive(store, practice)
    if start is None:
        return []
    end = now or store.now()
    listed: list[str] = []
    for name, definition, polled in triggers:
        if polled:
            continue
        if can_sweep(definition):
            why = "a sweep of its list endpoints checks the window"
            entry = list_gap(store, practice, name, start, end, why, checking=True)
        else:
            why = "it has no list endpoint to sweep, so they depend on the sender's retries"
            entry = list_gap(store, practice, name, start, end, why)
        listed.append(entry.attention_id)
    return listed
