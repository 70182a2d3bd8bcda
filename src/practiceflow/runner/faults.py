"""What the service does when running one event raises an exception no step caught.

A step's expected failures (API errors, template errors, refused input) fail the step and
are journaled by the runner. Anything else (a bug, an exhausted resource, a hook that
raised) reaches the service's per-event boundary, where :class:`EventGuard`:

* fails the event's runs with the error recorded (``kind: bug``) and marks the event
  handled, so that the service goes on with the next event and the failed run is listed
  with its reason (``runs list --status failed``, the console), to be retried by a person
  (``runs retry``) once the cause is fixed; it is never retried in a loop;
* when even that cannot be recorded (the store refuses), counts the failure; after
  :data:`QUARANTINE_AFTER` failures of the same event the same way, the event is
  quarantined: skipped by this process and logged as needing attention.

A transient store error (:class:`~practiceflow.errors.StoreError`) is not the event's
fault: it is raised on, as before.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from practiceflow.errors import StoreError
from practiceflow.runner.execute import Runner, RunOutcome
from practiceflow.state import EventRecord, StateStore

__all__ = ["QUARANTINE_AFTER", "EventGuard"]

logger = logging.getLogger("practiceflow.runner")

#: Failures of one event, the same way, that could not be recorded before it is skipped.
QUARANTINE_AFTER = 3

T = TypeVar("T")


def _error(exc: BaseException) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "kind": "bug",
        "message": f"internal error while running the event: {type(exc).__name__}: {exc}",
    }


class EventGuard:
    """The service's per-event and per-run boundary (see the module docstring).

    Args:
        store: the state store.
    """

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.failures: Counter[tuple[str, str]] = Counter()
        self.quarantined: set[str] = set()

    def skips(self, key: str) -> bool:
        """Tell whether an event (``source/event_id``) or a run id is quarantined."""
        return key in self.quarantined

    def event(
        self,
        practice: str,
        runners: Sequence[Runner],
        event: EventRecord,
        run: Callable[[], list[RunOutcome | None]],
    ) -> list[RunOutcome | None]:
        """Run one event's runs; on an unexpected exception fail them, recorded.

        Args:
            practice: the event's practice.
            runners: the recipes the event runs through.
            event: the event.
            run: runs it (``run_shared``).

        Returns:
            The outcomes (failed ones when the exception was recorded).
        """
        try:
            return run()
        except StoreError:
            raise
        except Exception as exc:  # anything a step did not catch: this event's problem only
            error = _error(exc)
            logger.error("event %s: %s", event.event_id, error["message"], exc_info=exc)
            recorded = self._record(lambda: self._fail_event(practice, runners, event, error))
            if recorded is None:
                self._count(f"{event.source}/{event.event_id}", exc)
                return []
            return list(recorded)

    def resume(self, run_id: str, run: Callable[[], RunOutcome]) -> RunOutcome | None:
        """Resume one run; on an unexpected exception fail it, recorded.

        Args:
            run_id: the run.
            run: resumes it.

        Returns:
            Its outcome (None when the failure could not be recorded).
        """
        try:
            return run()
        except StoreError:
            raise
        except Exception as exc:  # anything a step did not catch: this run's problem only
            error = _error(exc)
            logger.error("run %s: %s", run_id, error["message"], exc_info=exc)
            recorded = self._record(lambda: self._fail_run(run_id, error))
            if recorded is None:
                self._count(run_id, exc)
            return recorded

    def _record(self, record: Callable[[], T]) -> T | None:
        try:
            with self.store.atomic():
                return record()
        except Exception as exc:  # the store refused too: counted towards quarantine
            logger.error("the failure could not be recorded: %s: %s", type(exc).__name__, exc)
            return None

    def _count(self, key: str, exc: BaseException) -> None:
        self.failures[(key, type(exc).__name__)] += 1
        if self.failures[(key, type(exc).__name__)] >= QUARANTINE_AFTER:
            self.quarantined.add(key)
            logger.error(
                "%s failed %d times with %s: quarantined, it needs attention (not run again "
                "by this process; restart after fixing the cause)",
                key,
                QUARANTINE_AFTER,
                type(exc).__name__,
            )

    def _fail_run(self, run_id: str, error: dict[str, Any]) -> RunOutcome | None:
        run = self.store.get_run(run_id)
        if run is None:
            return None
        if run.status in ("succeeded", "failed", "cancelled"):
            return RunOutcome(run_id, run.event_id, run.status)
        self.store.set_run_status(run_id, "failed", error)
        return RunOutcome(run_id, run.event_id, "failed", False, (), error)

    def _fail_event(
        self,
        practice: str,
        runners: Sequence[Runner],
        event: EventRecord,
        error: dict[str, Any],
    ) -> list[RunOutcome | None]:
        outcomes: list[RunOutcome | None] = []
        for runner in runners:
            run_id, created = self.store.start_run(
                practice, runner.recipe.name, event.event_id, origin=runner.origin(event)
            )
            outcome = self._fail_run(run_id, error)
            if outcome is not None:
                outcomes.append(RunOutcome(run_id, event.event_id, outcome.status, created))
        self.store.mark_event_handled(practice, event.source, event.event_id)
        return outcomes
