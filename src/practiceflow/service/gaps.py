"""No silent gaps: the time ``serve`` was down is known, and what it may have missed is listed.

Each ``serve`` process writes a heartbeat into the state store (its row of the
heartbeats table, :mod:`.heartbeat`) every few seconds and when it stops. On the next start
the window from that last sign of life to now is a **known gap**: events may have been
sent while nothing listened, and the sender may have given up retrying them (the spec does
not say how long it retries). For every trigger of the recipes being served:

* a trigger polled from a cursor catches up by polling (:mod:`practiceflow.service.intake`):
  nothing is listed;
* a trigger a sweep can read back (``proposal_accepted`` without ``entityKey``: every
  client's proposals) gets a gap entry ``checking``, which the sweep closes by evidence, or
  hands to a person saying what it could not check (:mod:`practiceflow.service.sweep`);
* any other trigger (``eform_submitted``: there is no list of submitted forms) gets a gap
  entry that needs a person, saying why.

Entries are rows of the attention table (:mod:`practiceflow.service.needs_person`, its one
writer): ``practiceflow attention list``, ``runs list --status in_doubt``, the console's
"Needs attention" and ``/metrics`` read them; a person settles one with ``practiceflow
attention settle ID --note ...``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from practiceflow.service.heartbeat import Heartbeat, last_alive, mark_alive
from practiceflow.service.needs_person import list_gap
from practiceflow.service.sweep import can_sweep
from practiceflow.state import StateStore
from practiceflow.triggers.definition import TriggerDefinition

__all__ = ["Heartbeat", "last_alive", "mark_alive", "note_downtime"]


def note_downtime(
    store: StateStore,
    practice: str,
    triggers: Sequence[tuple[str, TriggerDefinition, bool]],
    *,
    now: datetime | None = None,
) -> list[str]:
    """List the window since the last sign of life for each trigger that may have missed
    events in it (module docstring).

    Args:
        store: the state store.
        practice: the practice key.
        triggers: ``(name, definition, caught up by polling)`` of every trigger served
            (:meth:`~practiceflow.service.intake.TriggerIntake.coverage`).
        now: the end of the window (now by default).

    Returns:
        The ids of the entries listed: ``checking`` for a trigger a sweep can prove
        complete (:mod:`.sweep`), ``open`` (a person's) for the others.
    """
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
