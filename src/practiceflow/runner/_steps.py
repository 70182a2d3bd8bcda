"""The step-level half of the runner: how each step of a run is rendered, sent and
journaled, and the commits that carry what waits for them.

The journal's rules are those of :mod:`practiceflow.runner.execute`, whose
:class:`~practiceflow.runner.Runner` (run-level: events, runs, batches) builds on
:class:`StepRunner`. What waits for a run's next commit: a new run's creation (with its
``@trigger`` entry), the moves of reads that answered, a write's success, and, within a
batch, runs that ended. A write's ``pending`` and ``sent`` are one fsynced commit before it
leaves; what waits is committed while the next request is in flight, if no commit comes
first.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from practiceflow.api.client import Client, PreparedCall
from practiceflow.engine import run_action
from practiceflow.engine.masking import mask_input, mask_request, mask_secrets
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
from practiceflow.runner.context import build_context, iteration_id
from practiceflow.runner.local import LocalContext, LocalStep
from practiceflow.runner.reconcile import Verdict, reconcile
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

__all__ = ["RECONCILER", "TRIGGER_STEP", "Point", "StepRunner", "error_json"]

logger = logging.getLogger("practiceflow.runner")

#: Journal id of the pseudo-step holding the event a run was started for.
TRIGGER_STEP = "@trigger"
#: Who is recorded when the runner settles an in-doubt step by reading back.
RECONCILER = "practiceflow (read-back)"
#: How many times one step may be found absent and re-sent within one pass.
_MAX_RESENDS = 2

Point = Callable[[str], None]
_Kind = Literal["ok", "skipped", "failed", "held", "stopped", "in_doubt"]


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


_preparer: tuple[int, ThreadPoolExecutor] | None = None
_preparer_lock = threading.Lock()


def _preparer_pool() -> ThreadPoolExecutor:
    """The threads that build writes' requests while their ``sent`` commit waits for the
    disk (see :class:`_SendingClient`); this process's own (a forked child's pool would
    count its parent's threads)."""
    global _preparer
    with _preparer_lock:
        if _preparer is None or _preparer[0] != os.getpid():
            _preparer = (os.getpid(), ThreadPoolExecutor(4, thread_name_prefix="pf-prepare"))
        return _preparer[1]


OnSend = Callable[[dict[str, Any], Callable[[], None] | None], None]


class _SendingClient:
    """The client as the engine sees it: journals ``sent`` just before the request leaves.

    Reads made by an action's checks (``get``) pass straight through; the action's own
    request (``request``) first calls ``on_send`` with what is about to be sent, and with
    a callable that ``on_send`` passes on as the durable commit's ``before_commit``.
    With practiceflow's :class:`~practiceflow.api.Client`, which builds a request ahead
    of sending it, that callable has the request built in another thread while the
    commit's fsync holds this one (it lets the other run); the request is sent once the
    commit has returned, never before. Another client builds and sends it after the
    commit.

    ``waiting`` (the journal's commit of what no request has to wait for) runs while the
    API works on the request, with practiceflow's client; another client's request is
    sent after it. An exception it raises is kept in :attr:`waiting_error`, for the
    runner to raise once the action is over: it is the journal's failure, not the
    step's.
    """

    def __init__(
        self, inner: ClientLike, on_send: OnSend, waiting: Callable[[], None] | None = None
    ) -> None:
        self._inner = inner
        self._on_send = on_send
        self._waiting = waiting
        self.sent = False
        self.waiting_error: BaseException | None = None

    def _wait_work(self) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is None:
            return
        try:
            waiting()
        except BaseException as exc:  # raised by the runner after the action
            self.waiting_error = exc

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        described = {
            "method": method,
            "path": path,
            "params": params,
            "json": json,
            "headers": headers,
        }
        inner = self._inner
        if not isinstance(inner, Client):
            self._on_send(described, None)
            self.sent = True
            self._wait_work()
            if self.waiting_error is not None:
                raise self.waiting_error  # the request is not sent
            return inner.request(method, path, params=params, json=json, headers=headers)
        started: list[Future[PreparedCall]] = []

        def prepare() -> PreparedCall:
            return inner.prepare(method, path, params=params, json=json, headers=headers)

        def ahead() -> None:
            # Called just before the fsync: the other thread gets the interpreter while
            # this one waits for the disk.
            started.append(_preparer_pool().submit(prepare))

        self._on_send(described, ahead)
        self.sent = True
        call = started[0].result() if started else prepare()
        return inner.send(call, while_waiting=self._wait_work)

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
    #: A write's outcome is among the deferred moves: it is committed while the next
    #: request is in flight, or with the next commit if that comes first (a later
    #: write's ``sent`` carries it), at the latest.
    write_waits: bool = False


@dataclass(frozen=True)
class _End:
    """A run that ended within :meth:`Runner.batch`, committed with the next commit."""

    state: _RunState
    status: RunStatus
    error: Any
    handled: EventRecord | None


class StepRunner:
    """The step-level half of :class:`~practiceflow.runner.Runner` (its base class): the
    commits that carry what waits for them, and each step's render, send and journal.

    :class:`~practiceflow.runner.Runner` sets the attributes below.
    """

    recipe: ValidRecipe
    store: StateStore
    client: ClientLike | None
    practice: str
    stop: threading.Event
    _point: Point
    _sleep: Callable[[float], None]
    #: Runs ended within Runner.batch() and not committed yet; None outside a batch.
    _ends: list[_End] | None

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

    @contextmanager
    def _committing(
        self,
        state: _RunState,
        *,
        durable: bool = False,
        before_commit: Callable[[], None] | None = None,
    ) -> Iterator[None]:
        """One commit of the store calls made inside, after the run's creation (its first
        commit) and its deferred moves (the history keeps the order things happened in),
        with the runs ended within a batch. A durable commit (a write's ``sent``) carries
        only those whose last write's outcome waits (it is committed before a later write
        leaves); the others wait for the request's flight (:meth:`_commit_waiting`).

        Raises:
            _LostRace: another runner created the run first; nothing was committed.
        """
        pending = self._ends
        ends = pending
        if pending and durable:
            ends = [end for end in pending if end.state.write_waits]
        with self.store.atomic(durable=durable, before_commit=before_commit):
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
        if pending and ends:
            # What was carried leaves the list; a durable commit carried only these.
            pending[:] = [end for end in pending if durable and not end.state.write_waits]
        state.start = None
        state.deferred.clear()
        state.write_waits = False

    def _commit_waiting(self, state: _RunState) -> None:
        """Commit what no request has to wait for: runs ended within a batch, and this
        run's deferred moves once a write's outcome is among them. Called while a request
        is in flight (the API's time pays for it), and when a run is abandoned by an
        exception."""
        if state.write_waits:  # the run exists: its write's `sent` created it
            with self._committing(state):
                pass
        elif self._ends:
            with self.store.atomic():
                self._commit_ends(self._ends)
            self._ends.clear()

    def _flush(self, state: _RunState) -> None:
        """Commit what waits for the run's next commit, if anything (the run's creation,
        the reads' deferred moves), before the run stops or reconciles."""
        if state.deferred or state.start is not None:
            with self._committing(state):
                pass

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

        def on_send(request: dict[str, Any], ahead: Callable[[], None] | None) -> None:
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
                with self._committing(state, durable=True, before_commit=ahead):
                    self.store.change_step(run_id, sid, *moves)
            else:
                held.extend(moves)
            journaled[0] = "sent"
            self._point(f"sent:{sid}")

        if isinstance(action, LocalStep):
            on_send({}, None)
            try:
                output = action.func(data, LocalContext(run_id, sid))
            except PracticeflowError as exc:
                return self._fail(state, sid, "sent", error_json(exc), held)
            return self._succeed(state, sid, output, held=held)
        return self._send(state, sid, step, action, data, journaled, on_send, held)

    def _journal(
        self,
        state: _RunState,
        sid: str,
        held: list[StepChange] | None,
        outcome: StepChange,
        *,
        succeeded: bool = False,
    ) -> None:
        """Journal a step's outcome: a read's with the moves held before it, with the run's
        next commit (see :meth:`_committing`); a write's success while the next request is
        in flight, or with the next commit if that comes first (see
        :meth:`_commit_waiting`); any other outcome of a write now."""
        if held is None:
            if succeeded:
                state.deferred.append((sid, (outcome,)))
                state.write_waits = True
                return
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
        on_send: OnSend,
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
            proxy = _SendingClient(self.client, on_send, lambda: self._commit_waiting(state))
            try:
                result = run_action(action, data, proxy)
            except InDoubtError as exc:
                _raise_waiting_error(proxy)
                self._journal(state, sid, held, StepChange.to_in_doubt(error_json(exc)))
                self._point(f"in_doubt:{sid}")
                return _Result("in_doubt")
            except (RateLimitError, ServerError, TransportError) as exc:
                _raise_waiting_error(proxy)
                retryable = not action.needs_write and attempt < attempts
                if retryable and not self.stop.is_set():
                    logger.info("run %s step %s: %s; retrying", run_id, sid, exc)
                    self._sleep(backoff * 2 ** (attempt - 1))
                    continue
                return self._fail(state, sid, journaled[0], error_json(exc), held)
            except PracticeflowError as exc:
                _raise_waiting_error(proxy)
                if proxy.sent and action.needs_write and not isinstance(exc, ApiError):
                    # The write was answered but the answer could not be used: it happened.
                    with self._committing(state):
                        self.store.step_in_doubt(run_id, sid, error_json(exc))
                    return _Result("held", None, {"step": sid, **error_json(exc)})
                return self._fail(state, sid, journaled[0], error_json(exc), held)
            _raise_waiting_error(proxy)
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
        outcome = StepChange.to_succeeded(mask_secrets(output, secret))
        self._journal(state, sid, held, outcome, succeeded=True)
        logger.info(
            "run %s step %s succeeded",
            run_id,
            sid,
            extra={"pf": {"run": run_id, "step": sid, "status": "succeeded"}},
        )
        self._point(f"done:{sid}")
        return _Result("ok", output)


def _raise_waiting_error(proxy: _SendingClient) -> None:
    """Raise the failure of the journal's commit made while the request was in flight:
    the journal's failure comes before whatever the step met (and the step's answer,
    not journaled, is dropped; a write's is in doubt on restart)."""
    if proxy.waiting_error is not None:
        raise proxy.waiting_error


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"error": value}
