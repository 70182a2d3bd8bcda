"""An exception no step caught, while running one event, is recorded (``kind: bug``) on the
run, which stays unfinished (its start counted towards quarantine), and the service goes on.
What cannot be recorded is counted here: after :data:`SKIP_AFTER` failures this process
skips it. A :class:`~practiceflow.errors.StoreError` is the store's fault: raised on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from practiceflow.errors import StoreError
from practiceflow.runner.execute import Runner, RunOutcome
from practiceflow.runner.quarantine import QUARANTINE_AFTER
from practiceflow.state import EventRecord, StateStore

logger = logging.getLogger("practiceflow.runner")

#: Failures after which this process skips an event or run: one more than quarantine needs.
SKIP_AFTER = QUARANTINE_AFTER + 1

T = TypeVar("T")


@dataclass(eq=False, repr=False)
class EventGuard:
    """The per-event and per-run boundary: the caller hands it what escaped."""

    store: StateStore
    failures: Counter[str] = field(default_factory=Counter)
    skipped: set[str] = field(default_factory=set)

    def skips(self, key: str) -> bool:
        """Tell whether this process skips an event (``source/event_id``) or a run id."""
        return key in self.skipped

    def event_failed(
        self,
        practice: str,
        runners: Sequence[Runner],
        event: EventRecord,
        exc: Exception,
    ) -> list[RunOutcome | None]:
        """Record what escaped an event's runs on the runs left ``running`` (the event stays
        pending); returns the outcomes recorded. A StoreError is raised on."""
        error = self._failed(f"{event.source}/{event.event_id}", f"event {event.event_id}", exc)

        def note() -> list[RunOutcome | None]:
            found = [
                run
                for runner in runners
                for run in self.store.list_runs(
                    practice=practice, recipe=runner.recipe.name, event_id=event.event_id, limit=1
                )
            ]
            outcomes = [self._note_run(run.run_id, error) for run in found]
            return [outcome for outcome in outcomes if outcome is not None]

        return list(self._record(note) or [])

    def run_failed(self, run_id: str, exc: Exception) -> RunOutcome | None:
        """Record what escaped resuming a run on the run (None: not recorded)."""
        error = self._failed(run_id, f"run {run_id}", exc)
        return self._record(lambda: self._note_run(run_id, error))

    def _failed(self, key: str, what: str, exc: Exception) -> dict[str, Any]:
        """Log and count a failure (a StoreError is raised on); returns the error to record."""
        if isinstance(exc, StoreError):
            raise exc
        name = type(exc).__name__
        message = f"internal error while running the event: {name}: {exc}"
        logger.error("%s: %s", what, message, exc_info=exc)
        self.failures[key] += 1
        if self.failures[key] >= SKIP_AFTER and key not in self.skipped:
            self.skipped.add(key)
            logger.error(
                "%s failed %d times in this process, the last time with %s: it needs "
                "attention; this process skips it from now on (restart after fixing the cause)",
                key,
                self.failures[key],
                name,
            )
        return {"type": name, "kind": "bug", "message": message}

    def _record(self, record: Callable[[], T]) -> T | None:
        try:
            with self.store.atomic():
                return record()
        except Exception as exc:  # the store refused too: the count in this process holds
            logger.error("the failure could not be recorded: %s: %s", type(exc).__name__, exc)
            return None

    def _note_run(self, run_id: str, error: dict[str, Any]) -> RunOutcome | None:
        """Record the error on a run left ``running`` (its start stays counted)."""
        run = self.store.get_run(run_id)
        if run is None or run.status != "running":
            return None
        self.store.set_run_status(run_id, "running", error)
        return RunOutcome(run_id, run.event_id, "running", False, (), error)
