"""No silent gaps: the time ``serve`` was down is known, and what it may have missed is listed.

Each ``serve`` process writes a heartbeat into the state store (the cursor row
``serve#alive`` of its practice) every few seconds and when it stops. On the next start
the window from that last sign of life to now is a **known gap**: events may have been
sent while nothing listened, and the sender may have given up retrying them (the spec does
not say how long it retries). For every trigger of the recipes being served:

* a trigger with a poll source catches up by polling (:mod:`practiceflow.runner.intake`),
  so its gap is closed;
* ``proposal_accepted`` without ``entityKey`` reads the proposals of the clients changed in
  the window (at most ``budget`` clients) and stores the acceptances it finds, deduplicated
  with the webhook; acceptances by clients whose record did not change stay invisible to
  polling, so the window is still listed, saying what was checked;
* any other trigger (``eform_submitted``...) gets an entry that needs attention.

An entry is a run of the pseudo-recipe ``gap: <trigger>`` held ``in_doubt`` at its one step
``gap``, whose error names the trigger and the window: ``practiceflow runs list --status
in_doubt`` and the console's "Needs attention" list it like any held run. A person checks
the practice for the window and settles it (``practiceflow runs resolve RUN --step gap --as
done``, or the console); the settled entry is then closed as ``succeeded``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from practiceflow.errors import PracticeflowError
from practiceflow.state import StateStore
from practiceflow.triggers.base import envelope, persist
from practiceflow.triggers.definition import TriggerDefinition, parse_time

__all__ = [
    "ALIVE_KEY",
    "GAP_PREFIX",
    "GAP_STEP",
    "Heartbeat",
    "close_settled_gaps",
    "last_alive",
    "mark_alive",
    "note_downtime",
    "record_gap",
]

logger = logging.getLogger("practiceflow.runner")

#: The cursor row holding a practice's last sign of life.
ALIVE_KEY: Final = "serve#alive"
#: Recipe name prefix of a gap entry.
GAP_PREFIX: Final = "gap: "
#: The one step of a gap entry.
GAP_STEP: Final = "gap"
#: Seconds between heartbeats.
HEARTBEAT_EVERY: Final = 5.0
#: Most clients whose proposals are read to catch up ``proposal_accepted`` after a gap.
CLIENT_BUDGET: Final = 25
_ENTITIES: Final = "/api/v1/entities/list"


def last_alive(store: StateStore, practice: str) -> datetime | None:
    """When a ``serve`` of the practice last showed a sign of life, if ever."""
    value = store.get_cursor(practice, ALIVE_KEY)
    return None if value is None else datetime.fromisoformat(value)


def mark_alive(store: StateStore, practice: str, at: datetime | None = None) -> None:
    """Record a sign of life (now, unless ``at`` says)."""
    store.set_cursor(practice, ALIVE_KEY, (at or store.now()).isoformat())


class Heartbeat:
    """Marks the practice alive every ``every`` seconds in a thread, and once at stop."""

    def __init__(self, store: StateStore, practice: str, every: float = HEARTBEAT_EVERY) -> None:
        self.store = store
        self.practice = practice
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pf-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        """Mark alive now, then keep doing so in the background."""
        mark_alive(self.store, self.practice)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                mark_alive(self.store, self.practice)
            except PracticeflowError as exc:  # a busy store: the next beat tries again
                logger.warning("heartbeat not recorded: %s", exc)

    def stop(self) -> None:
        """Stop beating; the last sign of life is now."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        try:
            mark_alive(self.store, self.practice)
        except PracticeflowError as exc:
            logger.warning("last heartbeat not recorded: %s", exc)


def record_gap(
    store: StateStore, practice: str, trigger: str, start: datetime, end: datetime, why: str
) -> str:
    """List a window in which a trigger's events may have been missed (module docstring).

    Returns:
        The entry's run id (the same one when this window was recorded before).
    """
    window = f"{start.isoformat(timespec='seconds')}..{end.isoformat(timespec='seconds')}"
    run_id, created = store.start_run(practice, GAP_PREFIX + trigger, f"gap:{trigger}:{window}")
    if not created:
        return run_id
    message = (
        f"serve was down from {start.isoformat(timespec='seconds')} to "
        f"{end.isoformat(timespec='seconds')}: {trigger} events in this window may have been "
        f"missed ({why}). Check the practice for them, start what is missing by hand, then "
        f"resolve: practiceflow runs resolve {run_id[:8]} --step {GAP_STEP} --as done"
    )
    request = {
        "use": "downtime",
        "trigger": trigger,
        "from": start.isoformat(),
        "to": end.isoformat(),
    }
    store.step_pending(run_id, GAP_STEP, request)
    store.step_sent(run_id, GAP_STEP)
    error = {"type": "Downtime", "message": message, "trigger": trigger, "window": window}
    store.step_in_doubt(run_id, GAP_STEP, error)
    store.set_run_status(run_id, "in_doubt", {"step": GAP_STEP, "reason": message})
    logger.warning("gap listed as needing attention: %s", message)
    return run_id


def close_settled_gaps(store: StateStore, practice: str | None) -> int:
    """Close (``succeeded``) the gap entries a person has settled; how many were closed."""
    closed = 0
    for run in store.list_runs(practice=practice, status="in_doubt", limit=500):
        if not run.recipe.startswith(GAP_PREFIX):
            continue
        if any(step.status == "in_doubt" for step in store.get_steps(run.run_id)):
            continue
        store.set_run_status(run.run_id, "succeeded")
        closed += 1
    return closed


def note_downtime(
    store: StateStore,
    practice: str,
    triggers: Sequence[tuple[str, TriggerDefinition, bool]],
    client: Any,
    *,
    now: datetime | None = None,
    budget: int = CLIENT_BUDGET,
) -> list[str]:
    """Turn the window since the last sign of life into catch-up or entries (module docstring).

    Args:
        store: the state store.
        practice: the practice key.
        triggers: ``(name, definition, caught up by polling)`` of every trigger served
            (:meth:`~practiceflow.runner.intake.TriggerIntake.coverage`).
        client: the API client (for ``proposal_accepted``'s changed-clients read).
        now: the end of the window (now by default).
        budget: most clients whose proposals are read.

    Returns:
        The run ids of the entries listed.
    """
    start = last_alive(store, practice)
    if start is None:
        return []
    end = now or store.now()
    listed: list[str] = []
    for name, definition, polled in triggers:
        if polled:
            continue
        why = "no poll source, so they depend on the sender's retries"
        if definition.key == "proposal_accepted" and definition.poll is not None:
            why = _accepted_catch_up(store, practice, name, definition, client, start, budget)
        listed.append(record_gap(store, practice, name, start, end, why))
    return listed


def _accepted_catch_up(
    store: StateStore,
    practice: str,
    name: str,
    definition: TriggerDefinition,
    client: Any,
    start: datetime,
    budget: int,
) -> str:
    """Read the proposals of clients changed since ``start``; store acceptances since then."""
    spec = definition.poll
    assert spec is not None  # checked by the caller
    since = start - timedelta(seconds=1)
    try:
        changed = [
            row["entityKey"]
            for row in client.paginate(_ENTITIES, params={"lastUpdated": since})
            if isinstance(row, dict) and isinstance(row.get("entityKey"), str)
        ]
    except PracticeflowError as exc:
        return f"the clients changed in the window could not be read ({exc})"
    found = 0
    for entity in changed[:budget]:
        options = {"entityKey": entity}
        try:
            path, params = spec.request(options)
            rows = list(client.paginate(path, params=params))
        except PracticeflowError as exc:
            return f"the proposals of changed clients could not all be read ({exc})"
        for row in rows:
            context = spec.context(row, options)
            accepted = (
                parse_time(str(row.get("acceptedOn") or "")) if isinstance(row, dict) else None
            )
            key = spec.dedupe_key(context)
            if not spec.passes(context) or key is None or accepted is None or accepted < start:
                continue
            data = spec.to_event(row, context)
            if persist(
                store, practice, name, key, envelope("poll", data, row, event=name), event=name
            ):
                found += 1
    over = len(changed) > budget
    return (
        f"the proposals of {min(len(changed), budget)} client(s) changed in the window were "
        f"read{' (more changed than the budget of ' + str(budget) + ')' if over else ''} and "
        f"{found} acceptance(s) caught up; an acceptance by a client whose record did not "
        "change cannot be seen by polling and depends on the sender's retries"
    )
