"""One step of a run: render it, send it, journal it by the rule of :mod:`.journal` (a
:class:`_Write` or a :class:`_Read`), its outcome committed before :meth:`StepExecutor.run_step`
returns; an in-doubt write is settled by reading back (:func:`reconcile`), never sent again.
A write carries a run-unique marker (``pf-`` and ten hex digits) in the field where the API
keeps a caller's free value (``read_back.marker``), so that a read-back recognises it for
certain; ``marker: false`` on a recipe or step turns it off (docs/modules-guide.md).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any, Literal

from practiceflow.api.client import RequestHooks
from practiceflow.engine import run_action
from practiceflow.engine.masking import (
    mask_input,
    mask_request,
    mask_secrets,
    mask_text,
    mask_values,
    output_pii,
    personal_values,
)
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
from practiceflow.hooks.read_backs import READ_BACKS, Verdict
from practiceflow.manifest import ActionModule, RecipeStep, default_registry
from practiceflow.runner.journal import RunJournal
from practiceflow.runner.local import LocalContext, LocalStep
from practiceflow.runner.validate import StepAction, ValidRecipe, build_context, iteration_id
from practiceflow.state import StepChange, StepStatus
from practiceflow.templating import render_tree

logger = logging.getLogger("practiceflow.runner")

#: Who is recorded when the runner settles an in-doubt step by reading back.
RECONCILER = "practiceflow (read-back)"
#: How many times one step may be found absent and re-sent within one pass.
_MAX_RESENDS = 2

#: Called with a label at each journal boundary of a step (``pending:S``, ``sent:S``,
#: ``answered:S``, ``done:S``, ``in_doubt:S``, ``reconciled:S``).
JournalPoint = Callable[[str], None]


def marker_for(run_id: str, step_id: str) -> str:
    """The marker of one step (one ``for_each`` item) of one run."""
    digest = hashlib.sha256(f"{run_id}/{step_id}".encode()).hexdigest()
    return "pf-" + digest[:10]


def marker_enabled(raw_recipe: Mapping[str, Any], step_id: str) -> bool:
    """Whether the step writes a marker: its own ``marker`` key, else the recipe's, else on."""
    steps = raw_recipe.get("steps")
    for raw in steps if isinstance(steps, list) else []:
        if isinstance(raw, Mapping) and raw.get("id") == step_id and "marker" in raw:
            return raw["marker"] is not False
    return raw_recipe.get("marker") is not False


def add_marker(action: ActionModule, data: Any, marker: str) -> Any:
    """The step's input with the marker in the action's declared free field (if any)."""
    declared = action.read_back
    name = declared.marker_field if declared is not None else None
    if declared is None or name is None or not isinstance(data, Mapping):
        return data
    current = data.get(name)
    if declared.marker_placement == "when_empty":
        return data if current else {**data, name: marker}
    if isinstance(current, str) and current.strip():
        return {**data, name: f"{current} [{marker}]"}
    return {**data, name: f"[{marker}]"}


def error_json(exc: BaseException) -> dict[str, Any]:
    """An error for the journal: ``{"type", "kind", "message"}`` (``status`` for API errors)."""
    data: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, PracticeflowError):
        data["kind"] = exc.kind
    if isinstance(exc, ApiError):
        data["status"] = exc.status
    return data


@dataclass
class StepResult:
    """What one step (all its iterations) came to; ``in_doubt``: a write's answer was lost."""

    kind: Literal["ok", "skipped", "failed", "held", "stopped", "in_doubt"]
    output: Any = None
    error: Any = None


@dataclass
class RunContext:
    """What a run's templates read: its trigger payload, start time and outputs so far."""

    trigger: Any
    now: datetime
    outputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Attempt:
    """One attempt of a step, as the journal is told of it."""

    journal: RunJournal
    sid: str
    entry: dict[str, Any]
    status: StepStatus | None  # as journaled now


class _Write(_Attempt):
    """A write: intent journaled durably before it leaves; outcome after its answer."""

    def sending(self) -> None:
        self.journal.write_intent(self.sid, self.entry, self.status)
        self.status = "sent"

    def refused(self) -> None:
        """The API answered 429: it did not act, so the write waits as ``pending``."""
        self.journal.refused(self.sid, self.entry)
        self.status = "pending"

    def outcome(self, move: StepChange) -> None:
        moves = [move]
        if self.status == "failed":  # failed again without leaving: a new attempt first
            moves.insert(0, StepChange.to_pending(self.entry))
        self.journal.outcome(self.sid, *moves)


@dataclass
class _Read(_Attempt):
    """A read or a local step: safe to send again, journaled with its outcome."""

    sent_at: list[datetime] = field(default_factory=list)  # each time it left

    def sending(self) -> None:
        self.sent_at.append(self.journal.now())

    def refused(self) -> None:
        """A read answered 429 is sent again; its answer is journaled with the last one."""

    def outcome(self, move: StepChange) -> None:
        self.journal.read_outcome(self.sid, self.entry, self.sent_at, move, self.status)


def reconcile(
    action: ActionModule | str,
    client: ClientLike | None,
    data: Mapping[str, Any],
    sent_at: datetime,
) -> Verdict:
    """Find out whether an in-doubt write happened, by its module's read-back; ``data`` is the
    input rendered again as sent. A failure to read back is ``unknown``, never an exception.
    """
    module = default_registry().action(action) if isinstance(action, str) else action
    declared = module.read_back
    func = READ_BACKS.get(declared.hook) if declared is not None else None
    if func is None:
        note = f"{module.key!r} has no read-back in the API; a person must check and resolve"
        return Verdict("unknown", note)
    if client is None:
        return Verdict("unknown", "no client to read back with")
    try:
        return func(client, data, sent_at)
    except (PracticeflowError, ValueError, TypeError) as exc:
        logger.warning("read-back for %s failed: %s", module.key, exc)
        return Verdict("unknown", f"the read-back failed ({exc}); a person must check")


@dataclass(eq=False, repr=False)
class StepExecutor:
    """Runs the steps of one run, each journaled before the next starts."""

    recipe: ValidRecipe
    journal: RunJournal
    client: ClientLike | None
    run: RunContext
    _: KW_ONLY
    stop: threading.Event
    on_point: JournalPoint
    sleep: Callable[[float], None]

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.journal.run_id

    def run_step(self, step: RecipeStep, retry_failed: bool = False) -> StepResult:
        """Run one step (each ``for_each`` item) from where the journal left it, and journal it."""
        if step.for_each is None:
            return self._run_one(step, step.id, None, retry_failed)
        context = self._context()
        try:
            items = step.for_each.render(context)
        except PracticeflowError as exc:
            return self._fail_early(step.id, self._template_error(exc))
        if not isinstance(items, list):
            error = {"message": f"for_each rendered {type(items).__name__}; expected a list"}
            return self._fail_early(step.id, error)
        if not items:
            if self.journal.loaded(step.id) is None:
                reason = {"reason": "for_each: no items"}
                self.journal.outcome(step.id, StepChange.to_skipped(reason))
            return StepResult("skipped", [])
        outputs: list[Any] = []
        failed: Any = None
        for index, item in enumerate(items):
            if self.stop.is_set():
                return StepResult("stopped")
            result = self._run_one(step, iteration_id(step.id, index), item, retry_failed)
            if result.kind in ("held", "stopped"):
                return result
            if result.kind == "failed":
                if step.on_error == "stop":
                    return result
                failed = result.error
            outputs.append(result.output)
        return StepResult("ok", outputs, failed)

    def _template_error(self, exc: PracticeflowError) -> dict[str, Any]:
        """A template's error for the journal, masked (a filter may quote the value it refused)."""
        error = error_json(exc)
        error["message"] = mask_text(str(error["message"]), self._run_personal())
        return error

    def _run_personal(self) -> frozenset[str]:
        """Every personal value the run has read so far (its event's and its steps' outputs')."""
        run = self.run
        trigger = self.recipe.trigger
        tagged = output_pii(run.trigger, trigger.output_schema, trigger.output_pii_paths)
        values = set(personal_values(run.trigger, tagged))
        for step_id, output in run.outputs.items():
            action = self.recipe.actions.get(step_id)
            schema = getattr(getattr(action, "output", None), "schema", None)
            if isinstance(schema, Mapping):
                tagged = output_pii(output, schema, getattr(action, "output_pii_paths", None))
                values.update(personal_values(output, tagged))
        return frozenset(values)

    def _context(self, item: Any = None) -> dict[str, Any]:
        run = self.run
        return build_context(run.trigger, run.outputs, self.recipe.recipe.vars, run.now, item)

    def _fail_early(self, sid: str, error: dict[str, Any]) -> StepResult:
        record = self.journal.loaded(sid)
        if record is not None and record.status == "failed":
            return StepResult("failed", None, record.error)
        if record is None or record.status == "pending":
            self.journal.outcome(sid, StepChange.to_failed(error))
        return StepResult("failed", None, {"step": sid, **error})

    def _run_one(self, step: RecipeStep, sid: str, item: Any, retry_failed: bool) -> StepResult:
        record = self.journal.loaded(sid)
        status: StepStatus | None = record.status if record else None
        if status == "succeeded":
            return StepResult("ok", record.output if record else None)
        if status == "skipped":
            return StepResult("skipped")
        if status == "failed" and not retry_failed:
            error = _as_dict(record.error if record else None)
            return StepResult("failed", None, {"step": sid, **error})
        action = self.recipe.actions[step.id]
        context = self._context(item)
        if step.if_ is not None and status in (None, "pending", "failed"):
            try:
                wanted = step.if_.render(context)
            except PracticeflowError as exc:
                return self._fail_render(sid, status, self._template_error(exc))
            if not wanted:
                reason = {"reason": "if was false", "if": step.if_.source}
                moves = [StepChange.to_skipped(reason)]
                if status == "failed":
                    moves.insert(0, StepChange.to_pending({"use": step.use}))
                self.journal.outcome(sid, *moves)
                return StepResult("skipped")
        try:
            data = render_tree(step.with_, context)
        except PracticeflowError as exc:
            error = self._template_error(exc)
            if status in ("sent", "in_doubt"):  # cannot happen: the same inputs rendered before
                return StepResult("held", None, {"step": sid, **error})
            return self._fail_render(sid, status, error)
        if isinstance(action, ActionModule) and marker_enabled(self.recipe.recipe.raw, step.id):
            data = add_marker(action, data, marker_for(self.run_id, sid))
        if status == "sent" and action.needs_write:
            error = {"reason": "found 'sent' with no answer when the run resumed"}
            self.journal.outcome(sid, StepChange.to_in_doubt(error))
            self.on_point(f"in_doubt:{sid}")
            status = "in_doubt"
        resends = 0
        while True:
            if status == "in_doubt":
                verdict = self._reconcile(sid, action, data)
                if verdict.outcome == "found":
                    return StepResult("ok", verdict.output)
                if verdict.outcome == "unknown" or resends >= _MAX_RESENDS:
                    return StepResult("held", None, {"step": sid, "reason": verdict.note})
                status = "pending"
                resends += 1
            result = self._attempt(sid, step, action, data, status)
            if result.kind != "in_doubt":
                return result
            status = "in_doubt"

    def _fail_render(
        self, sid: str, status: StepStatus | None, error: dict[str, Any]
    ) -> StepResult:
        """A step whose templates failed: nothing was sent."""
        moves = [StepChange.to_failed(error)]
        if status == "failed":
            moves.insert(0, StepChange.to_pending(None))
        self.journal.outcome(sid, *moves)
        _log_failure(self.run_id, sid, error)
        return StepResult("failed", None, {"step": sid, **error})

    def _reconcile(self, sid: str, action: StepAction, data: Any) -> Verdict:
        store = self.journal.store
        run_id = self.run_id
        record = store.get_step(run_id, sid)
        sent_at = (record.sent_at if record else None) or store.now()
        verdict = (
            reconcile(action, self.client, data, sent_at)
            if isinstance(action, ActionModule)
            else Verdict("unknown", f"{action.key!r} is a local step; a person decides")
        )
        pf = {"run": run_id, "step": sid, "status": "in_doubt", "verdict": verdict.outcome}
        logger.warning("run %s step %s in doubt: %s", run_id, sid, verdict.note, extra={"pf": pf})
        if verdict.outcome == "found":
            note = f"reconciled: {verdict.note}"
            store.resolve_step(run_id, sid, "done", RECONCILER, note, output=verdict.output)
        elif verdict.outcome == "absent":
            note = f"safe to retry: {verdict.note}"
            store.resolve_step(run_id, sid, "retry", RECONCILER, note)
        self.on_point(f"reconciled:{sid}")
        return verdict

    def _attempt(
        self,
        sid: str,
        step: RecipeStep,
        action: StepAction,
        data: Any,
        status: StepStatus | None,
    ) -> StepResult:
        """Send the step once (a read: as its ``retry`` allows) and journal its outcome."""
        personal = self._run_personal()
        entry: dict[str, Any] = {
            "use": step.use,
            "input": mask_values(mask_input(data, action.pii_paths), personal),
        }
        kind: _Write | _Read = (
            _Write(self.journal, sid, entry, status)
            if action.needs_write
            else _Read(self.journal, sid, entry, status)
        )

        sent: list[bool] = []

        def on_send(request: dict[str, Any]) -> None:
            if request and "request" not in entry:  # a list's first page, a write's one
                entry["request"] = mask_values(
                    mask_request(request, data, action.pii_paths), personal
                )
            self.on_point(f"pending:{sid}")  # rendered and admitted; nothing journaled yet
            kind.sending()
            sent.append(True)
            self.on_point(f"sent:{sid}")

        if isinstance(action, LocalStep):
            on_send({})
            try:
                output = action.func(data, LocalContext(self.run_id, sid))
            except PracticeflowError as exc:
                return self._failed(kind, sid, error_json(exc))
            return self._succeeded(kind, sid, output, frozenset())
        if self.client is None:
            error = {"message": "no API client configured", "kind": "config"}
            return self._failed(kind, sid, error)
        retry = step.retry or {}
        attempts = 1 if action.needs_write else int(retry.get("attempts", 1))
        backoff = float(retry.get("backoff", 1.0))
        hooks = RequestHooks(on_send=on_send, on_refused=kind.refused)
        for attempt in range(1, attempts + 1):
            try:
                result = run_action(action, data, self.client, hooks=hooks)
            except InDoubtError as exc:
                kind.outcome(StepChange.to_in_doubt(error_json(exc)))
                self.on_point(f"in_doubt:{sid}")
                return StepResult("in_doubt")
            except (RateLimitError, ServerError, TransportError) as exc:
                if not action.needs_write and attempt < attempts and not self.stop.is_set():
                    logger.info("run %s step %s: %s; retrying", self.run_id, sid, exc)
                    self.sleep(backoff * 2 ** (attempt - 1))
                    continue
                return self._failed(kind, sid, error_json(exc))
            except PracticeflowError as exc:
                if sent and action.needs_write and not isinstance(exc, ApiError):
                    # The write was answered but the answer could not be used: it happened.
                    self.journal.outcome(sid, StepChange.to_in_doubt(error_json(exc)))
                    return StepResult("held", None, {"step": sid, **error_json(exc)})
                return self._failed(kind, sid, error_json(exc))
            self.on_point(f"answered:{sid}")
            for warning in result.warnings:
                logger.warning("run %s step %s: %s", self.run_id, sid, warning)
            return self._succeeded(kind, sid, result.output, action.secret_paths)
        raise BugError("unreachable: the retry loop always returns")  # pragma: no cover

    def _failed(self, kind: _Write | _Read, sid: str, error: dict[str, Any]) -> StepResult:
        kind.outcome(StepChange.to_failed(error))
        _log_failure(self.run_id, sid, error)
        return StepResult("failed", None, {"step": sid, **error})

    def _succeeded(
        self,
        kind: _Write | _Read,
        sid: str,
        output: Any,
        secret: frozenset[tuple[str, ...]],
    ) -> StepResult:
        # Secrets never reach the journal; this run's later steps still get the value.
        kind.outcome(StepChange.to_succeeded(mask_secrets(output, secret)))
        run_id = self.run_id
        pf = {"run": run_id, "step": sid, "status": "succeeded"}
        logger.info("run %s step %s succeeded", run_id, sid, extra={"pf": pf})
        self.on_point(f"done:{sid}")
        return StepResult("ok", output)


def _log_failure(run_id: str, sid: str, error: dict[str, Any]) -> None:
    pf = {"run": run_id, "step": sid, "status": "failed"}
    message = error.get("message", error)
    logger.warning("run %s step %s failed: %s", run_id, sid, message, extra={"pf": pf})


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {"error": value}
