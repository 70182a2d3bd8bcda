"""One run of a recipe for one event, step by step, journaled so that a crash loses nothing.

The journal (:class:`~practiceflow.state.StateStore`) decides what has been done:

* a write about to send is journaled ``pending`` with its rendered request (personal data
  masked) and ``sent``, in one commit fsynced *before* the request leaves (the request is
  built meanwhile, in another thread, while the fsync waits for the disk);
* its answer makes it ``succeeded`` (with the output later steps read), ``failed`` (the API
  refused it, or it never left) or ``in_doubt`` (a write left and its outcome is unknown).
  ``failed`` and ``in_doubt`` are committed at once; ``succeeded`` while the next request
  is in flight (the API's time pays for the commit), or with the run's next commit if that
  comes first. A later write's ``sent`` always carries it, so at most one write is ever
  found ``sent`` without its answer; a crash before that commit leaves the write in doubt,
  to be read back;
* a read (or a local step) is safe to run again: its ``pending``, ``sent`` and outcome are
  journaled after it answered, with the next commit the run makes (the next write's
  ``sent``, or the run's end, with its event marked handled); the history reads the same,
  and a crash before that leaves it to be run again;
* on restart a run resumes at its first unfinished step: ``succeeded`` steps are never sent
  again (their journaled output is reused), a write found ``sent`` is ``in_doubt``;
* an ``in_doubt`` write is reconciled by reading back (:mod:`.reconcile`): found (the step
  succeeds), absent (it is sent again), or unknown (the run is held for a person).

Within :meth:`Runner.batch` (``practiceflow run`` and ``serve`` draining stored events), a
run's end is committed while the next run's first request is in flight, or with its first
commit (always with the next write's ``sent`` when the run ended on a write).

A new run is created by its first commit (the first write's ``sent``, or the run's end),
not before: a run stopped before anything was journaled leaves only its event, still pending.
The event a run was started for is journaled once, as the pseudo-step ``@trigger`` (payload,
source and recipe file), in the transaction that creates the run, so that a run can be
resumed or retried without its event. Should another runner create the same run first, that
commit fails before anything is sent, and the run is driven as the other runner left it.

``on_point`` is called at each journal boundary with a label such as ``pending:bill``
(rendered, not yet journaled), ``sent:bill`` (before the request leaves; a write is
journaled ``sent`` by then) or ``answered:bill`` (answer received, not yet journaled); the
CLI uses it for crash tests (``PRACTICEFLOW_TEST_KILL_AT``).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from practiceflow.errors import BugError
from practiceflow.hooks import ClientLike
from practiceflow.runner._steps import (
    RECONCILER,
    TRIGGER_STEP,
    Point,
    StepRunner,
    _End,
    _LostRace,
    _RunState,
    _Start,
    error_json,
)
from practiceflow.runner.budget import Priority, priority
from practiceflow.runner.validate import ValidRecipe
from practiceflow.state import EventRecord, RunStatus, StateStore
from practiceflow.triggers.base import event_from_record

__all__ = ["RECONCILER", "TRIGGER_STEP", "RunOutcome", "Runner", "error_json", "run_shared"]

logger = logging.getLogger("practiceflow.runner")


@dataclass(frozen=True)
class RunOutcome:
    """Where a run stands after the runner worked on it.

    Attributes:
        run_id: the run.
        event_id: the event it runs for.
        status: the run's status (``running`` when it was interrupted by a shutdown).
        created: whether this pass started the run (False: resumed or already done).
        held: ids of steps waiting for a person (``in_doubt``).
        error: why it failed or is held, when it is.
    """

    run_id: str
    event_id: str
    status: RunStatus
    created: bool = False
    held: tuple[str, ...] = ()
    error: Any = None


class Runner(StepRunner):
    """Runs one recipe's events durably (see the module docstring).

    Args:
        recipe: the checked recipe.
        store: the state store holding events, runs and journals.
        client: the API client (anything with its methods); None only when every step is
            local.
        practice: the practice key events and runs are stored under.
        stop: when set, the runner finishes the current step and leaves the rest of the run
            resumable (graceful shutdown).
        on_point: called with a label at each journal boundary (crash tests, progress).
        sleep: how to wait between read retries.
    """

    def __init__(
        self,
        recipe: ValidRecipe,
        store: StateStore,
        client: ClientLike | None,
        *,
        practice: str,
        stop: threading.Event | None = None,
        on_point: Point | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.recipe = recipe
        self.store = store
        self.client = client
        self.practice = practice
        self.stop = stop or threading.Event()
        self._point = on_point or (lambda label: None)
        self._sleep = sleep
        self._recipe_file = str(Path(recipe.source).resolve())
        self._ends = None  # see StepRunner

    # -- events ------------------------------------------------------------------------

    @property
    def source(self) -> str:
        """The store ``source`` of this recipe's events: its trigger's name (module key)."""
        return self.recipe.trigger.key

    def process_pending(self, limit: int = 100) -> list[RunOutcome]:
        """Run every pending event of this recipe's trigger, oldest first.

        An event is marked handled once its run has finished (succeeded, failed or held
        for a person); an interrupted run leaves its event pending, to be resumed. Test
        deliveries are acknowledged and not run.

        Args:
            limit: at most this many events.

        Returns:
            The outcome of each run worked on.
        """
        outcomes = []
        with self.batch():
            for event in self.store.pending_events(self.practice, limit, source=self.source):
                if self.stop.is_set():
                    break
                outcome = self.run_event(event)
                if outcome is not None:
                    outcomes.append(outcome)
        return outcomes

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Run several events, one commit fewer each, from one thread.

        Within, the end of a run that is already stored (its status, its event marked
        handled, its reads' last moves) is committed while the next request is in flight
        or with the next commit this runner makes, and on leaving at the latest. A write's
        ``sent`` never waits, and carries the ends that hold a write's success (a run that
        ended on a write). A crash before that commit leaves the run unfinished and its
        event pending: the run is resumed, only its reads after its last write are run
        again, and a last write whose success was lost is read back.
        """
        if self._ends is not None:  # already batching
            yield
            return
        self._ends = []
        try:
            yield
        finally:
            ends, self._ends = self._ends, None
            if ends:
                with self.store.atomic():
                    self._commit_ends(ends)

    def run_event(self, event: EventRecord, *, mark_handled: bool = True) -> RunOutcome | None:
        """Start (or resume) the one run of this recipe for an event and drive it.

        Args:
            event: the stored event (a trigger's envelope, or a bare payload).
            mark_handled: mark the event handled when its run finished (the service
                marks it itself when several recipes share a trigger).

        Returns:
            The run's outcome; None for a test delivery (acknowledged, not run).
        """
        found = event_from_record(event)
        if found.is_test:
            self.store.mark_event_handled(self.practice, event.source, event.event_id)
            return None
        origin = {
            "event_key": event.event_key,
            "event_id": event.event_id,
            "source": event.source,
            "via": found.source,
            "recipe_file": self._recipe_file,
            "payload": found.payload,
        }
        handled = event if mark_handled else None
        existing = self._find_run(event.event_id)
        if existing is None:
            # A new run: created, with its @trigger entry, by its first commit.
            run_id = uuid.uuid4().hex
            state = _RunState(run_id, found.payload, self.store.now(), {})
            state.start = _Start(event.event_id, origin)
            try:
                return self._steps(state, event.event_id, created=True, handled=handled)
            except _LostRace:
                logger.info("run of event %s: started by another runner", event.event_id)
            existing = self._find_run(event.event_id)
            if existing is None:  # pragma: no cover - a run is never deleted while driven
                raise BugError(f"the run of event {event.event_id} vanished")
        # A run started without its event (by an older practiceflow, say) gets it now.
        if self.store.get_step(existing, TRIGGER_STEP) is None:
            self.store.step_skipped(existing, TRIGGER_STEP, origin)
        return self._drive(existing, created=False, handled=handled)

    def _find_run(self, event_id: str) -> str | None:
        runs = self.store.list_runs(
            practice=self.practice, recipe=self.recipe.name, event_id=event_id, limit=1
        )
        return runs[0].run_id if runs else None

    def resume(self, run_id: str, *, retry_failed: bool = False) -> RunOutcome:
        """Drive an existing run again from its first unfinished step.

        Args:
            run_id: the run.
            retry_failed: send failed steps again (``runs retry``).

        Returns:
            The run's outcome.

        Raises:
            BugError: the run does not exist or was not started by a runner.
        """
        return self._drive(run_id, created=False, retry_failed=retry_failed)

    # -- one run -----------------------------------------------------------------------

    def _drive(
        self,
        run_id: str,
        *,
        created: bool,
        retry_failed: bool = False,
        handled: EventRecord | None = None,
    ) -> RunOutcome:
        """Drive a run from its first unfinished step; ``handled``: the event to mark
        handled when the run ends (not when it stops, to be resumed)."""
        run = self.store.get_run(run_id)
        if run is None:
            message = f"run {run_id} does not exist"
            raise BugError(message)
        if run.status in ("succeeded", "cancelled"):
            # Its event may still be pending (a run ended before its event was marked, by
            # an older practiceflow, or cancelled by a person): it has nothing left to do.
            if handled is not None:
                self.store.mark_event_handled(self.practice, handled.source, handled.event_id)
            return RunOutcome(run_id, run.event_id, run.status, created)
        journal = {step.step_id: step for step in self.store.get_steps(run_id)}
        origin = journal.get(TRIGGER_STEP)
        if origin is None or not isinstance(origin.error, Mapping):
            message = f"run {run_id} has no {TRIGGER_STEP} entry; it was not started by a runner"
            raise BugError(message)
        if len(journal) > 1 or run.status != "pending":
            self.store.set_run_status(run_id, "running")
        state = _RunState(run_id, origin.error.get("payload"), run.created_at, journal)
        return self._steps(
            state, run.event_id, created=created, retry_failed=retry_failed, handled=handled
        )

    def _steps(
        self,
        state: _RunState,
        event_id: str,
        *,
        created: bool,
        retry_failed: bool = False,
        handled: EventRecord | None = None,
    ) -> RunOutcome:
        """Run a run's steps from its first unfinished one, and end it (see :meth:`_drive`)."""
        run_id = state.run_id
        log = {"run": run_id, "recipe": self.recipe.name, "event": event_id}
        logger.info("run %s: started", run_id, extra={"pf": {**log, "status": "running"}})
        with priority(Priority.EVENT):
            try:
                for step in self.recipe.recipe.steps:
                    if self.stop.is_set():
                        pf = {"pf": log}
                        logger.info("run %s: stopped before %s", run_id, step.id, extra=pf)
                        self._flush(state)
                        return RunOutcome(run_id, event_id, "running", created)
                    result = self._step(state, step, retry_failed)
                    if result.kind == "stopped":
                        self._flush(state)
                        return RunOutcome(run_id, event_id, "running", created)
                    if result.kind == "held":
                        error = result.error
                        return self._finish(state, event_id, "in_doubt", created, error, handled)
                    if result.kind == "failed" and step.on_error == "stop":
                        error = result.error
                        return self._finish(state, event_id, "failed", created, error, handled)
                    state.outputs[step.id] = result.output
            except BaseException:
                self._save_waiting(state)
                raise
        return self._finish(state, event_id, "succeeded", created, None, handled)

    def _save_waiting(self, state: _RunState) -> None:
        """On the way out of an exception: commit a write's outcome that waits (else it
        is in doubt when the run resumes), if the store still takes it."""
        if not state.write_waits:
            return
        try:
            self._commit_waiting(state)
        except Exception as exc:  # the exception on its way out matters more
            logger.warning("run %s: a step's outcome could not be journaled: %s", state.run_id, exc)

    def _finish(
        self,
        state: _RunState,
        event_id: str,
        status: RunStatus,
        created: bool,
        error: Any,
        handled: EventRecord | None,
    ) -> RunOutcome:
        if self._ends is not None and state.start is None:
            # Within batch(): committed with the next commit (a run not created yet is
            # created now, so that a lost race is this run's own).
            self._ends.append(_End(state, status, error, handled))
        else:
            with self._committing(state):
                self.store.set_run_status(state.run_id, status, error)
                if handled is not None:
                    self.store.mark_event_handled(self.practice, handled.source, handled.event_id)
        held: tuple[str, ...] = ()
        if status == "in_doubt" and isinstance(error, Mapping) and "step" in error:
            held = (str(error["step"]),)
        pf = {"run": state.run_id, "recipe": self.recipe.name, "status": status}
        logger.info("run %s: %s", state.run_id, status, extra={"pf": pf})
        return RunOutcome(state.run_id, event_id, status, created, held, error)


def run_shared(
    store: StateStore, practice: str, runners: Sequence[Runner], event: EventRecord
) -> list[RunOutcome | None]:
    """Run every recipe of a trigger on one of its events, and mark the event handled once
    none of the runs was interrupted (each ended: succeeded, failed or held).

    A lone recipe marks it in its run's last commit; several mark it after the last run.

    Args:
        store: the store holding the event.
        practice: the event's practice.
        runners: the recipes whose trigger stored the event (none: it is only marked).
        event: the event.

    Returns:
        Each runner's outcome, in order (None for a test delivery).
    """
    if len(runners) == 1:
        return [runners[0].run_event(event)]
    outcomes = [runner.run_event(event, mark_handled=False) for runner in runners]
    if all(outcome is None or outcome.status != "running" for outcome in outcomes):
        store.mark_event_handled(practice, event.source, event.event_id)
    return outcomes
