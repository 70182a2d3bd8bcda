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

A webhook subscription **in doubt** (its subscribe got no answer, or the process died while
it was in flight: it may exist on the server, and the spec has no list of subscriptions to
look in) is not repeated, and stops nothing else: ``serve`` and ``worker`` list it the same
way, as ``subscription in doubt: <trigger>`` held at its step ``gap``, with the steps a
person takes (:func:`record_subscription_doubt`), once while that entry is open. Until it
is settled, a trigger with a poll source is polled instead; one without says its events are
not being received. ``practiceflow triggers unsubscribe NAME --forget`` closes the entry
(:func:`close_subscription_doubt`), and the next start subscribes again.
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
    "DOUBT_PREFIX",
    "GAP_PREFIX",
    "GAP_STEP",
    "Heartbeat",
    "close_settled_gaps",
    "close_subscription_doubt",
    "is_attention_entry",
    "last_alive",
    "mark_alive",
    "note_downtime",
    "record_gap",
    "record_subscription_doubt",
]

logger = logging.getLogger("practiceflow.runner")

#: The cursor row holding a practice's last sign of life.
ALIVE_KEY: Final = "serve#alive"
#: Recipe name prefix of a gap entry.
GAP_PREFIX: Final = "gap: "
#: Recipe name prefix of the entry of a webhook subscription in doubt.
DOUBT_PREFIX: Final = "subscription in doubt: "
#: The one step of a gap entry (and of a subscription-in-doubt entry).
GAP_STEP: Final = "gap"
#: Seconds between heartbeats.
HEARTBEAT_EVERY: Final = 5.0
#: Most clients whose proposals are read to catch up ``proposal_accepted`` after a gap.
CLIENT_BUDGET: Final = 25
_ENTITIES: Final = "/api/v1/entities/list"


def last_alive(store: StateStore, practice: str, key: str = ALIVE_KEY) -> datetime | None:
    """When a ``serve`` of the practice (or what ``key`` names) last showed a sign of life."""
    value = store.get_cursor(practice, key)
    return None if value is None else datetime.fromisoformat(value)


def mark_alive(
    store: StateStore, practice: str, at: datetime | None = None, key: str = ALIVE_KEY
) -> None:
    """Record a sign of life (now, unless ``at`` says) in the cursor row ``key``."""
    store.set_cursor(practice, key, (at or store.now()).isoformat())


class Heartbeat:
    """Marks the practice alive every ``every`` seconds in a thread, and once at stop."""

    def __init__(
        self,
        store: StateStore,
        practice: str,
        every: float = HEARTBEAT_EVERY,
        key: str = ALIVE_KEY,
    ) -> None:
        self.store = store
        self.practice = practice
        self.every = every
        self.key = key
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pf-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        """Mark alive now, then keep doing so in the background."""
        mark_alive(self.store, self.practice, key=self.key)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                mark_alive(self.store, self.practice, key=self.key)
            except PracticeflowError as exc:  # a busy store: the next beat tries again
                logger.warning("heartbeat not recorded: %s", exc)

    def stop(self) -> None:
        """Stop beating; the last sign of life is now."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        try:
            mark_alive(self.store, self.practice, key=self.key)
        except PracticeflowError as exc:
            logger.warning("last heartbeat not recorded: %s", exc)


def record_gap(
    store: StateStore,
    practice: str,
    trigger: str,
    start: datetime,
    end: datetime,
    why: str,
    who: str = "serve",
) -> str:
    """List a window in which a trigger's events may have been missed (module docstring).

    ``who`` names what was down in the entry's message (``serve``, or every worker of a
    fleet, :mod:`practiceflow.fleet.outage`).

    Returns:
        The entry's run id (the same one when this window was recorded before).
    """
    window = f"{start.isoformat(timespec='seconds')}..{end.isoformat(timespec='seconds')}"
    run_id, created = store.start_run(practice, GAP_PREFIX + trigger, f"gap:{trigger}:{window}")
    if not created:
        return run_id
    message = (
        f"{who} was down from {start.isoformat(timespec='seconds')} to "
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
    error = {"type": "Downtime", "message": message, "trigger": trigger, "window": window}
    _hold(store, run_id, request, error)
    logger.warning("gap listed as needing attention: %s", message)
    return run_id


def is_attention_entry(recipe: str) -> bool:
    """Whether a run's recipe name is one of the entries of this module, not a recipe's."""
    return recipe.startswith((GAP_PREFIX, DOUBT_PREFIX))


def _hold(store: StateStore, run_id: str, request: dict[str, Any], error: dict[str, Any]) -> None:
    """Hold a new entry in doubt at its one step, ``error["message"]`` saying why."""
    store.step_pending(run_id, GAP_STEP, request)
    store.step_sent(run_id, GAP_STEP)
    store.step_in_doubt(run_id, GAP_STEP, error)
    store.set_run_status(run_id, "in_doubt", {"step": GAP_STEP, "reason": error["message"]})


def record_subscription_doubt(
    store: StateStore, practice: str, trigger: str, *, polled: bool, fleet: bool = False
) -> str:
    """List a trigger whose webhook subscription is in doubt (module docstring).

    While an entry of the trigger is open, a restart lists nothing new; once a person closed
    it, a subscription still in doubt is listed again.

    Args:
        store: the state store.
        practice: the practice key.
        trigger: the trigger's name.
        polled: whether the trigger is polled meanwhile (it has a poll source).
        fleet: the entry is for ``worker`` (the commands to run name the practice).

    Returns:
        The entry's run id.
    """
    recipe = DOUBT_PREFIX + trigger
    earlier = store.list_runs(practice=practice, recipe=recipe, limit=1000)
    for run in earlier:
        if run.status == "in_doubt":
            return run.run_id
    # Numbered: callers that race to list it (two workers) agree on one entry.
    run_id, created = store.start_run(
        practice, recipe, f"subscription-doubt:{trigger}#{len(earlier) + 1}"
    )
    if not created:
        return run_id
    meanwhile = (
        "Meanwhile its events are received by polling (deduplicated with the webhook, as in "
        "mode: both)."
        if polled
        else "Its events are NOT being received meanwhile: it has no poll source."
    )
    forget = f"practiceflow triggers unsubscribe {trigger} --forget"
    if fleet:
        forget += f" --practice {practice} --state <the fleet's postgresql:// URL>"
    message = (
        f"the webhook subscription of trigger {trigger!r} is in doubt: its subscribe (POST "
        "/api/v1/webhooks) got no answer, so it may exist on the server; it is not repeated "
        f"(a second one could deliver twice). {meanwhile} To settle it: 1. check the "
        "practice's webhook settings and delete a subscription of this trigger's event "
        f"found there; 2. run '{forget}', which closes this entry; 3. restart "
        f"{'the workers' if fleet else 'serve'}: it subscribes again"
    )
    request = {"use": "subscribe", "trigger": trigger, "polled": polled}
    error = {"type": "SubscriptionInDoubt", "message": message, "trigger": trigger}
    _hold(store, run_id, request, error)
    logger.warning("listed as needing attention (run %s): %s", run_id[:8], message)
    return run_id


def close_subscription_doubt(
    store: StateStore, practice: str, trigger: str, who: str, note: str
) -> list[str]:
    """Close the open subscription-in-doubt entries of a trigger (it was forgotten or
    subscribed again).

    Args:
        store: the state store.
        practice: the practice key.
        trigger: the trigger's name.
        who: who settled it (kept in the journal).
        note: how.

    Returns:
        The run ids of the entries closed.
    """
    closed: list[str] = []
    recipe = DOUBT_PREFIX + trigger
    for run in store.list_runs(practice=practice, recipe=recipe, status="in_doubt", limit=100):
        step = store.get_step(run.run_id, GAP_STEP)
        if step is not None and step.status == "in_doubt":
            store.resolve_step(run.run_id, GAP_STEP, "done", who, note)
        store.set_run_status(run.run_id, "succeeded")
        closed.append(run.run_id)
    return closed


def close_settled_gaps(store: StateStore, practice: str | None) -> int:
    """Close (``succeeded``) the entries a person has settled; how many were closed."""
    closed = 0
    for run in store.list_runs(practice=practice, status="in_doubt", limit=500):
        if not is_attention_entry(run.recipe):
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
