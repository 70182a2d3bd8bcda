"""One run of a recipe for one event, step by step, journaled so that a crash loses nothing.

:class:`Runner` creates the run (origin and recipe version stored) before its first step,
drives each step by the rule of :mod:`.journal`, and ends it in one commit with its event
handled. A resumed run starts at its first unfinished step, under the run's lease, each
start counted first (:mod:`.quarantine`).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from practiceflow.budget import Priority, priority
from practiceflow.errors import BugError
from practiceflow.hooks import ClientLike
from practiceflow.runner.journal import RunJournal, StepTaken
from practiceflow.runner.quarantine import QUARANTINE_AFTER, is_quarantined, quarantine_error
from practiceflow.runner.run_lease import keeping, known_dead, lease_for
from practiceflow.runner.run_retry import after_run
from practiceflow.runner.step_executor import JournalPoint, RunContext, StepExecutor
from practiceflow.runner.validate import ValidRecipe
from practiceflow.state import EventRecord, RunRecord, RunStatus, StateStore, StepRecord
from practiceflow.triggers.base import event_from_record
from practiceflow.versions.pinned import recipe_for_run, version_hold
from practiceflow.versions.recorded import (
    VersionUnavailable,
    recipe_version,
    remember_built,
    save_version,
)

logger = logging.getLogger("practiceflow.runner")

#: Versions each store was given by this process (a fleet's thousands of runners: once).
_SAVED: weakref.WeakKeyDictionary[StateStore, set[str]] = weakref.WeakKeyDictionary()
_SAVED_LOCK = threading.Lock()


@dataclass(frozen=True)
class RunOutcome:
    """Where a run stands after the runner worked on it (``running``: interrupted by a stop;
    ``held``: steps waiting for a person; ``driven_elsewhere``: who drives it instead).
    """

    run_id: str
    event_id: str
    status: RunStatus
    created: bool = False
    held: tuple[str, ...] = ()
    error: Any = None
    driven_elsewhere: str | None = None


@dataclass(frozen=True)
class _Start:
    """What a start does: ``drive``, ``hold`` or ``ended`` (``error``: a hold's or quarantine's)."""

    kind: Literal["drive", "hold", "ended"]
    recipe: ValidRecipe | None = None
    steps: dict[str, StepRecord] = field(default_factory=dict)
    error: Any = None


class Runner:
    """Runs one recipe's events durably (``client`` None only when every step is local;
    ``stop``: finish the current step, leave the rest resumable; ``on_point``: journal points).
    """

    def __init__(
        self,
        recipe: ValidRecipe,
        store: StateStore,
        client: ClientLike | None,
        *,
        practice: str,
        stop: threading.Event | None = None,
        on_point: JournalPoint | None = None,
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
        self._version = recipe_version(recipe)
        self._digest: str | None = None  # set once the version is stored

    @property
    def version(self) -> str | None:
        """The digest of the served recipe's version (None: not read from text)."""
        return None if self._version is None else self._version.digest

    def stored_version(self) -> str | None:
        """Store the served version once per runner (and once per store) and return its digest."""
        if self._digest is None and self._version is not None:
            digest = self._version.digest
            with _SAVED_LOCK:
                saved = _SAVED.setdefault(self.store, set())
                known = digest in saved
            if not known:  # content-addressed: the runners sharing a recipe store it once
                digest = save_version(self.store, self._version)
                with _SAVED_LOCK:
                    saved.add(digest)
            remember_built(digest, self.recipe)
            self._digest = digest
        return self._digest

    @property
    def source(self) -> str:
        """The store ``source`` of this recipe's events: its trigger's name (module key)."""
        return self.recipe.trigger.key

    def process_pending(self, limit: int = 100) -> list[RunOutcome]:
        """Run up to ``limit`` pending events of this recipe's trigger, oldest first."""
        outcomes = []
        for event in self.store.pending_events(self.practice, limit, source=self.source):
            if self.stop.is_set():
                break
            outcome = self.run_event(event)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    def run_event(self, event: EventRecord, *, mark_handled: bool = True) -> RunOutcome | None:
        """Start (or resume) and drive this recipe's run for an event (None: a test delivery);
        ``mark_handled`` False: the caller marks it (several recipes share a trigger).
        """
        if event_from_record(event).is_test:
            self.store.mark_event_handled(self.practice, event.source, event.event_id)
            return None
        run_id, created = self.store.start_run(
            self.practice,
            self.recipe.name,
            event.event_id,
            origin=self.origin(event),
            version=self.stored_version(),
        )
        if not created:
            logger.info("run of event %s: found run %s", event.event_id, run_id)
        handled = event if mark_handled else None
        try:
            return self._drive(run_id, created=created, handled=handled)
        except StepTaken as exc:
            logger.info("run %s: %s was taken by another runner; driving it again", run_id, exc)
            self.store.uncount_start(run_id)  # this start ended in order, not in a crash
        return self._drive(run_id, created=False, handled=handled)

    def origin(self, event: EventRecord) -> dict[str, Any]:
        """A run's origin: the event's key, id, source, how it came, recipe file, payload."""
        found = event_from_record(event)
        return {
            "event_key": event.event_key,
            "event_id": event.event_id,
            "source": event.source,
            "via": found.source,
            "recipe_file": self._recipe_file,
            "payload": found.payload,
        }

    def resume_run(self, run_id: str, *, retry_failed: bool = False) -> RunOutcome:
        """Drive an existing run again from its first unfinished step (``retry_failed``: a
        person's ``runs retry``: failed steps sent again, a quarantined run started).
        """
        try:
            return self._drive(run_id, created=False, retry_failed=retry_failed)
        except StepTaken as exc:
            logger.info("run %s: %s was taken by another runner", run_id, exc)
            self.store.uncount_start(run_id)
        return self._drive(run_id, created=False, retry_failed=retry_failed)

    def _drive(
        self,
        run_id: str,
        *,
        created: bool,
        retry_failed: bool = False,
        handled: EventRecord | None = None,
    ) -> RunOutcome:
        """Drive a run holding its lease (taken, run loaded, start counted: one transaction)."""
        self.stored_version()  # its durable commit of its own, once per runner
        wanted = lease_for(run_id, self.store.now())
        with self.store.atomic():
            lease = self.store.take_run_lease(wanted, known_dead)
            run = self.store.get_run(run_id)
            if run is None:
                message = f"run {run_id} does not exist"
                raise BugError(message)
            start = self._start(run, retry_failed) if lease.owner == wanted.owner else None
        if start is None:
            who = lease.describe()
            logger.info("run %s: driven by another process (%s); left to it", run_id, who)
            return RunOutcome(run_id, run.event_id, run.status, created, driven_elsewhere=who)
        with keeping(self.store, lease):
            return self._drive_held(run, start, created, retry_failed, handled, lease.owner)

    def _start(self, run: RunRecord, retry_failed: bool) -> _Start:
        """What this start does, decided (and counted) in the lease's transaction."""
        quarantined = is_quarantined(run) and not retry_failed
        if run.status in ("succeeded", "cancelled") or quarantined:
            return _Start("ended", error=run.error if quarantined else None)
        if not isinstance(run.origin, Mapping):
            message = f"run {run.run_id} has no origin; it was not started by a runner"
            raise BugError(message)
        if run.starts >= QUARANTINE_AFTER and not retry_failed:
            return _Start("hold", error=quarantine_error(run))
        try:
            recipe = recipe_for_run(self.store, run, self.recipe, self.stored_version())
        except VersionUnavailable as exc:
            return _Start("hold", error=version_hold(run, exc))
        steps = {step.step_id: step for step in self.store.get_steps(run.run_id)}
        self.store.count_start(run.run_id)
        return _Start("drive", recipe, steps)

    def _drive_held(
        self,
        run: RunRecord,
        start: _Start,
        created: bool,
        retry_failed: bool,
        handled: EventRecord | None,
        lease: str,
    ) -> RunOutcome:
        """Drive a run from its first unfinished step; ``handled`` is marked when it ends."""
        run_id = run.run_id
        if start.kind == "ended":
            # A person may cancel a run while its event waits: nothing is left to do; a
            # quarantined run waits for a person.
            if handled is not None:
                self.store.mark_event_handled(self.practice, handled.source, handled.event_id)
            return RunOutcome(run_id, run.event_id, run.status, created, (), start.error)
        if start.recipe is None or not isinstance(run.origin, Mapping):
            return self._hold(run, created, handled, start.error)
        recipe = start.recipe
        journal = RunJournal(self.store, run_id, start.steps, lease)
        context = RunContext(run.origin.get("payload"), run.created_at)
        executor = StepExecutor(
            recipe,
            journal,
            self.client,
            context,
            stop=self.stop,
            on_point=self._progress(run),
            sleep=self._sleep,
        )
        log = {"run": run_id, "recipe": recipe.name, "event": run.event_id}
        logger.info("run %s: started", run_id, extra={"pf": {**log, "status": "running"}})
        status: RunStatus = "succeeded"
        error: Any = None
        with priority(Priority.EVENT):
            for step in recipe.recipe.steps:
                if self.stop.is_set():
                    logger.info("run %s: stopped before %s", run_id, step.id, extra={"pf": log})
                    return self._stopped(run, created)
                result = executor.run_step(step, retry_failed)
                if result.kind == "stopped":
                    return self._stopped(run, created)
                if result.kind == "held":
                    status, error = "in_doubt", result.error
                    break
                if result.kind == "failed" and step.on_error == "stop":
                    status, error = "failed", result.error
                    break
                context.outputs[step.id] = result.output
        return self._end(journal, run.event_id, status, created, error, handled)

    def _stopped(self, run: RunRecord, created: bool) -> RunOutcome:
        """A graceful stop: the run stays ``running`` and this start is not counted."""
        self.store.uncount_start(run.run_id)
        return RunOutcome(run.run_id, run.event_id, "running", created)

    def _progress(self, run: RunRecord) -> JournalPoint:
        """Journal points to ``on_point``; the first completed step forgives earlier starts."""
        earlier = run.starts > 0

        def point(label: str) -> None:
            nonlocal earlier
            if earlier and label.startswith("done:"):
                earlier = False
                self.store.forgive_starts(run.run_id)
            self._point(label)

        return point

    def _hold(
        self, run: RunRecord, created: bool, handled: EventRecord | None, error: dict[str, Any]
    ) -> RunOutcome:
        """Hold a run for a person, with the reason, before any step of this start."""
        pf = {"run": run.run_id, "recipe": self.recipe.name, "event": run.event_id}
        logger.error("run %s: %s", run.run_id, error["reason"], extra={"pf": pf})
        journal = RunJournal(self.store, run.run_id, {})
        return self._end(journal, run.event_id, "in_doubt", created, error, handled)

    def _end(
        self,
        journal: RunJournal,
        event_id: str,
        status: RunStatus,
        created: bool,
        error: Any,
        handled: EventRecord | None,
    ) -> RunOutcome:
        with self.store.atomic():  # the run's end and its retry policy: one commit
            journal.end(self.practice, status, error, handled)
            after_run(self.store, self.recipe, self.practice, journal.run_id, status, error)
        held: tuple[str, ...] = ()
        if status == "in_doubt" and isinstance(error, Mapping) and "step" in error:
            held = (str(error["step"]),)
        pf = {"run": journal.run_id, "recipe": self.recipe.name, "status": status}
        logger.info("run %s: %s", journal.run_id, status, extra={"pf": pf})
        return RunOutcome(journal.run_id, event_id, status, created, held, error)


def run_shared(
    store: StateStore, practice: str, runners: Sequence[Runner], event: EventRecord
) -> list[RunOutcome | None]:
    """Run every recipe of a trigger on one event and mark it handled once no run was
    interrupted (a lone recipe marks it in its run's last commit). None for a test delivery.
    """
    if len(runners) == 1:
        return [runners[0].run_event(event)]
    outcomes = [runner.run_event(event, mark_handled=False) for runner in runners]
    if all(outcome is None or outcome.status != "running" for outcome in outcomes):
        store.mark_event_handled(practice, event.source, event.event_id)
    return outcomes
