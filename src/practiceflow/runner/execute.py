"""One run of a recipe for one event, step by step, journaled so that a crash loses nothing.

The journal (:class:`~practiceflow.state.StateStore`) decides what has been done:

* a write about to send is journaled ``pending`` with its rendered request (personal data
  masked) and ``sent``, in one commit fsynced *before* the request leaves;
* its answer makes it ``succeeded`` (with the output later steps read), ``failed`` (the API
  refused it, or it never left) or ``in_doubt`` (a write left and its outcome is unknown);
* a read (or a local step) is safe to run again: its ``pending``, ``sent`` and outcome are
  journaled after it answered, with the next commit the run makes (the next write's
  ``sent``, or the run's end, with its event marked handled); the history reads the same,
  and a crash before that leaves it to be run again;
* on restart a run resumes at its first unfinished step: ``succeeded`` steps are never sent
  again (their journaled output is reused), a write found ``sent`` is ``in_doubt``;
* an ``in_doubt`` write is reconciled by reading back (:mod:`.reconcile`): found (the step
  succeeds), absent (it is sent again), or unknown (the run is held for a person).

Within :meth:`Runner.batch` (``practiceflow run`` and ``serve`` draining stored events), a
run's end rides on the next run's first commit.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from practiceflow.engine import run_action
from practiceflow.errors import (
    ApiError,
    BugError,
    InDoubtError,
    PracticeflowError,
    RateLimitError,
    ServerError,
    TransportError,
)
from practiceflow.hooks import ClientLike
from practiceflow.manifest import ActionModule, RecipeStep
from practiceflow.runner.budget import Priority, priority
from practiceflow.runner.context import build_context, iteration_id
from practiceflow.runner.local import LocalContext, LocalStep
from practiceflow.runner.reconcile import Verdict, reconcile
from practiceflow.runner.redact import mask_input, mask_request, mask_secrets
from practiceflow.runner.validate import StepAction, ValidRecipe
from practiceflow.state import (
    EventRecord,
    RunStatus,
    StateStore,
    StepChange,
    StepRecord,
    StepStatus,
)
from practiceflow.templating import render_tree
from practiceflow.triggers.base import event_from_record

__all__ = ["RECONCILER", "TRIGGER_STEP", "RunOutcome", "Runner", "error_json", "run_shared"]

logger = logging.getLogger("practiceflow.runner")

#: Journal id of the pseudo-step holding the event a run was started for.
TRIGGER_STEP = "@trigger"
#: Who is recorded when the runner settles an in-doubt step by reading back.
RECONCILER = "practiceflow (read-back)"
#: How many times one step may be found absent and re-sent within one pass.
_MAX_RESENDS = 2

Point = Callable[[str], None]
_Kind = Literal["ok", "skipped", "failed", "held", "stopped", "in_doubt"]


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


@dataclass
class _Result:
    kind: _Kind
    output: Any = None
    error: Any = None


def error_json(exc: BaseException) -> dict[str, Any]:
    """Describe an error for the journal (its message never holds a secret).

    Args:
        exc: the error.

    Returns:
        ``{"type", "kind", "message"}`` plus ``status`` for API errors.
    """
    data: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, PracticeflowError):
        data["kind"] = exc.kind
    if isinstance(exc, ApiError):
        data["status"] = exc.status
    return data


class _SendingClient:
    """The client as the engine sees it: journals ``sent`` just before the request leaves.

    Reads made by an action's checks (``get``) pass straight through; the action's own
    request (``request``) first calls ``on_send`` with what is about to be sent.
    """

    def __init__(self, inner: ClientLike, on_send: Callable[[dict[str, Any]], None]) -> None:
        self._inner = inner
        self._on_send = on_send
        self.sent = False

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        self._on_send(
            {"method": method, "path": path, "params": params, "json": json, "headers": headers}
        )
        self.sent = True
        return self._inner.request(method, path, params=params, json=json, headers=headers)

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._inner.get(path, params=params)

    def describe_request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return self._inner.describe_request(method, path, params=params, json=json, headers=headers)


@dataclass(frozen=True)
class _Start:
    """A run not created yet: its first commit creates it, with its ``@trigger`` entry."""

    event_id: str
    origin: dict[str, Any]


class _LostRace(Exception):
    """Another runner created the run first; this attempt committed and sent nothing."""


@dataclass
class _RunState:
    run_id: str
    trigger: Any
    now: Any
    journal: dict[str, StepRecord]
    outputs: dict[str, Any] = field(default_factory=dict)
    #: Moves of reads that answered, journaled with the run's next commit (step id, moves).
    deferred: list[tuple[str, tuple[StepChange, ...]]] = field(default_factory=list)
    #: Set while the run exists only here: the run's next commit creates it.
    start: _Start | None = None


@dataclass(frozen=True)
class _End:
    """A run that ended within :meth:`Runner.batch`, committed with the next commit."""

    state: _RunState
    status: RunStatus
    error: Any
    handled: EventRecord | None


class Runner:
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
        #: Runs ended within batch() and not committed yet; None outside batch().
        self._ends: list[_End] | None = None

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
        handled, its reads' last moves) is committed with the next commit this runner
        makes (the next run's first), and on leaving at the latest. Nothing a write did
        waits: a write's ``sent`` and outcome are committed as always. A crash before that
        commit leaves the run unfinished and its event pending: the run is resumed, and
        only its reads after its last write are run again.
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

    def _commit_ends(self, ends: list[_End]) -> None:
        """The store calls that end runs (inside a transaction)."""
        for end in ends:
            state = end.state
            for sid, moves in state.deferred:
                self.store.change_step(state.run_id, sid, *moves)
            self.store.set_run_status(state.run_id, end.status, end.error)
            if end.handled is not None:
                event = end.handled
                self.store.mark_event_handled(self.practice, event.source, event.event_id)

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
        if self._find_run(event.event_id) is None:
            # A new run: created, with its @trigger entry, by its first commit.
            run_id = uuid.uuid4().hex
            state = _RunState(run_id, found.payload, self.store.now(), {})
            state.start = _Start(event.event_id, origin)
            try:
                return self._steps(state, event.event_id, created=True, handled=handled)
            except _LostRace:
                logger.info("run of event %s: started by another runner", event.event_id)
        existing = self._find_run(event.event_id)
        if existing is None:  # pragma: no cover - a run is never deleted while it is driven
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
            for step in self.recipe.recipe.steps:
                if self.stop.is_set():
                    logger.info("run %s: stopped before %s", run_id, step.id, extra={"pf": log})
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
        return self._finish(state, event_id, "succeeded", created, None, handled)

    @contextmanager
    def _committing(self, state: _RunState, *, durable: bool = False) -> Iterator[None]:
        """One commit of the store calls made inside, after the run's creation (its first
        commit) and the reads' deferred moves (the history keeps the order things happened
        in).

        Raises:
            _LostRace: another runner created the run first; nothing was committed.
        """
        ends = self._ends
        with self.store.atomic(durable=durable):
            if ends:
                self._commit_ends(ends)
            if state.start is not None:
                start = state.start
                _, created = self.store.start_run(
                    self.practice,
                    self.recipe.name,
                    start.event_id,
                    skipped={TRIGGER_STEP: start.origin},
                    run_id=state.run_id,
                    created_at=state.now,
                )
                if not created:
                    raise _LostRace(state.run_id)
            for sid, moves in state.deferred:
                self.store.change_step(state.run_id, sid, *moves)
            yield
        if ends:
            ends.clear()
        state.start = None
        state.deferred.clear()

    def _flush(self, state: _RunState) -> None:
        """Commit what waits for the run's next commit, if anything (the run's creation,
        the reads' deferred moves), before the run stops or reconciles."""
        if state.deferred or state.start is not None:
            with self._committing(state):
                pass

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

    def _step(self, state: _RunState, step: RecipeStep, retry_failed: bool) -> _Result:
        if step.for_each is None:
            return self._one(state, step, step.id, None, retry_failed)
        context = build_context(state.trigger, state.outputs, self.recipe.recipe.vars, state.now)
        try:
            items = step.for_each.render(context)
        except PracticeflowError as exc:
            return self._fail_early(state, step.id, error_json(exc))
        if not isinstance(items, list):
            error = {"message": f"for_each rendered {type(items).__name__}; expected a list"}
            return self._fail_early(state, step.id, error)
        if not items:
            if step.id not in state.journal:
                with self._committing(state):
                    reason = {"reason": "for_each: no items"}
                    self.store.step_skipped(state.run_id, step.id, reason)
            return _Result("skipped", [])
        outputs: list[Any] = []
        failed: Any = None
        for index, item in enumerate(items):
            if self.stop.is_set():
                return _Result("stopped")
            result = self._one(state, step, iteration_id(step.id, index), item, retry_failed)
            if result.kind in ("held", "stopped"):
                return result
            if result.kind == "failed":
                if step.on_error == "stop":
                    return result
                failed = result.error
            outputs.append(result.output)
        return _Result("ok", outputs, failed)

    def _fail_early(self, state: _RunState, sid: str, error: Any) -> _Result:
        record = state.journal.get(sid)
        if record is None or record.status in ("pending", "failed"):
            if record is not None and record.status == "failed":
                return _Result("failed", None, record.error)
            with self._committing(state):
                self.store.step_failed(state.run_id, sid, error)
        return _Result("failed", None, {"step": sid, **error})

    def _one(
        self, state: _RunState, step: RecipeStep, sid: str, item: Any, retry_failed: bool
    ) -> _Result:
        record = state.journal.get(sid)
        status: StepStatus | None = record.status if record else None
        if status == "succeeded":
            return _Result("ok", record.output if record else None)
        if status == "skipped":
            return _Result("skipped")
        if status == "failed" and not retry_failed:
            return _Result(
                "failed", None, {"step": sid, **_as_dict(record.error if record else None)}
            )
        action = self.recipe.actions[step.id]
        context = build_context(
            state.trigger, state.outputs, self.recipe.recipe.vars, state.now, item
        )
        if step.if_ is not None and status in (None, "pending", "failed"):
            try:
                wanted = step.if_.render(context)
            except PracticeflowError as exc:
                return self._fail(state, sid, status, error_json(exc))
            if not wanted:
                reason = {"reason": "if was false", "if": step.if_.source}
                with self._committing(state):
                    if status == "failed":
                        self.store.step_pending(state.run_id, sid, {"use": step.use})
                    self.store.step_skipped(state.run_id, sid, reason)
                return _Result("skipped")
        try:
            data = render_tree(step.with_, context)
        except PracticeflowError as exc:
            if status in ("sent", "in_doubt"):  # cannot happen: the same inputs rendered before
                return _Result("held", None, {"step": sid, **error_json(exc)})
            return self._fail(state, sid, status, error_json(exc))
        if status == "sent" and action.needs_write:
            error = {"reason": "found 'sent' with no answer when the run resumed"}
            with self._committing(state):
                self.store.step_in_doubt(state.run_id, sid, error)
            self._point(f"in_doubt:{sid}")
            status = "in_doubt"
        resends = 0
        while True:
            if status == "in_doubt":
                self._flush(state)
                verdict = self._reconcile(state.run_id, sid, action, data)
                if verdict.outcome == "found":
                    return _Result("ok", verdict.output)
                if verdict.outcome == "unknown" or resends >= _MAX_RESENDS:
                    return _Result("held", None, {"step": sid, "reason": verdict.note})
                status = "pending"
                resends += 1
            result = self._execute(state, sid, step, action, data, status)
            if result.kind != "in_doubt":
                return result
            status = "in_doubt"

    def _fail(
        self,
        state: _RunState,
        sid: str,
        status: StepStatus | None,
        error: dict[str, Any],
        held: list[StepChange] | None = None,
    ) -> _Result:
        run_id = state.run_id
        if held:
            self._journal(state, sid, held, StepChange.to_failed(error))
        else:
            with self._committing(state):
                if status == "failed":
                    self.store.step_pending(run_id, sid, None)
                self.store.step_failed(run_id, sid, error)
        logger.warning(
            "run %s step %s failed: %s",
            run_id,
            sid,
            error.get("message", error),
            extra={"pf": {"run": run_id, "step": sid, "status": "failed"}},
        )
        return _Result("failed", None, {"step": sid, **error})

    def _reconcile(self, run_id: str, sid: str, action: StepAction, data: Any) -> Verdict:
        record = self.store.get_step(run_id, sid)
        sent_at = (record.sent_at if record else None) or self.store.now()
        key = action.key
        verdict = reconcile(key, self.client, data, sent_at)
        pf = {"run": run_id, "step": sid, "status": "in_doubt", "verdict": verdict.outcome}
        logger.warning("run %s step %s in doubt: %s", run_id, sid, verdict.note, extra={"pf": pf})
        if verdict.outcome == "found":
            self.store.resolve_step(
                run_id,
                sid,
                "done",
                RECONCILER,
                f"reconciled: {verdict.note}",
                output=verdict.output,
            )
        elif verdict.outcome == "absent":
            self.store.resolve_step(
                run_id, sid, "retry", RECONCILER, f"safe to retry: {verdict.note}"
            )
        self._point(f"reconciled:{sid}")
        return verdict

    def _execute(
        self,
        state: _RunState,
        sid: str,
        step: RecipeStep,
        action: StepAction,
        data: Any,
        status: StepStatus | None,
    ) -> _Result:
        run_id = state.run_id
        journaled: list[StepStatus | None] = [status]
        # A write's `pending` and `sent` are one commit, fsynced before it leaves. A read
        # (or a local step) is safe to run again: its moves are held and journaled with
        # its outcome, with the run's next commit; a crash before that runs it again.
        held: list[StepChange] | None = None if action.needs_write else []

        def on_send(request: dict[str, Any]) -> None:
            moves: list[StepChange] = []
            # A held move keeps its own time: the history shows when the request left.
            at = None if held is None else self.store.now()
            if journaled[0] != "sent":
                entry = {"use": step.use, "input": mask_input(data, action.pii_paths)}
                if request:
                    entry["request"] = mask_request(request, data, action.pii_paths)
                moves.append(StepChange.to_pending(entry, at=at))
                # Rendered, nothing of this attempt journaled yet: a crash here sends it later.
                self._point(f"pending:{sid}")
            moves.append(StepChange.to_sent(durable=held is None, at=at))
            if held is None:
                with self._committing(state, durable=True):
                    self.store.change_step(run_id, sid, *moves)
            else:
                held.extend(moves)
            journaled[0] = "sent"
            self._point(f"sent:{sid}")

        if isinstance(action, LocalStep):
            on_send({})
            try:
                output = action.func(data, LocalContext(run_id, sid))
            except PracticeflowError as exc:
                return self._fail(state, sid, "sent", error_json(exc), held)
            return self._succeed(state, sid, output, held=held)
        return self._send(state, sid, step, action, data, journaled, on_send, held)

    def _journal(
        self, state: _RunState, sid: str, held: list[StepChange] | None, outcome: StepChange
    ) -> None:
        """Journal a step's outcome: a write's now; a read's, with the moves held before it,
        with the run's next commit (see :meth:`_committing`)."""
        if held is None:
            with self._committing(state):
                self.store.change_step(state.run_id, sid, outcome)
            return
        state.deferred.append((sid, (*held, outcome)))
        held.clear()

    def _send(
        self,
        state: _RunState,
        sid: str,
        step: RecipeStep,
        action: ActionModule,
        data: Any,
        journaled: list[StepStatus | None],
        on_send: Callable[[dict[str, Any]], None],
        held: list[StepChange] | None,
    ) -> _Result:
        run_id = state.run_id
        retry = step.retry or {}
        attempts = 1 if action.needs_write else int(retry.get("attempts", 1))
        backoff = float(retry.get("backoff", 1.0))
        for attempt in range(1, attempts + 1):
            if self.client is None:
                error = {"message": "no API client configured", "kind": "config"}
                return self._fail(state, sid, journaled[0], error, held)
            proxy = _SendingClient(self.client, on_send)
            try:
                result = run_action(action, data, proxy)
            except InDoubtError as exc:
                self._journal(state, sid, held, StepChange.to_in_doubt(error_json(exc)))
                self._point(f"in_doubt:{sid}")
                return _Result("in_doubt")
            except (RateLimitError, ServerError, TransportError) as exc:
                retryable = not action.needs_write and attempt < attempts
                if retryable and not self.stop.is_set():
                    logger.info("run %s step %s: %s; retrying", run_id, sid, exc)
                    self._sleep(backoff * 2 ** (attempt - 1))
                    continue
                return self._fail(state, sid, journaled[0], error_json(exc), held)
            except PracticeflowError as exc:
                if proxy.sent and action.needs_write and not isinstance(exc, ApiError):
                    # The write was answered but the answer could not be used: it happened.
                    with self._committing(state):
                        self.store.step_in_doubt(run_id, sid, error_json(exc))
                    return _Result("held", None, {"step": sid, **error_json(exc)})
                return self._fail(state, sid, journaled[0], error_json(exc), held)
            self._point(f"answered:{sid}")
            for warning in result.warnings:
                logger.warning("run %s step %s: %s", run_id, sid, warning)
            return self._succeed(state, sid, result.output, action.secret_paths, held)
        raise BugError("unreachable: the retry loop always returns")  # pragma: no cover

    def _succeed(
        self,
        state: _RunState,
        sid: str,
        output: Any,
        secret: frozenset[tuple[str, ...]] = frozenset(),
        held: list[StepChange] | None = None,
    ) -> _Result:
        # Secrets never reach the journal; this run's later steps still get the value.
        run_id = state.run_id
        self._journal(state, sid, held, StepChange.to_succeeded(mask_secrets(output, secret)))
        logger.info(
            "run %s step %s succeeded",
            run_id,
            sid,
            extra={"pf": {"run": run_id, "step": sid, "status": "succeeded"}},
        )
        self._point(f"done:{sid}")
        return _Result("ok", output)


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


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"error": value}
