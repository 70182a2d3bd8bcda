"""Where tool calls are carried out: reads at once, writes previewed then journaled.

The desk is synchronous (the API client and the state store are); the server calls it
from worker threads, one call at a time (``self._lock``), so a write and its journal are
never raced by another call of the same server.

A write goes through three moves:

1. :meth:`WriteDesk.preview` checks the input (the CLI's messages; nothing is sent on a bad
   input), renders the request with a dry run and keeps the call under a fresh confirm
   token. What the assistant sees of the request has secrets and personal data masked;
   the user's view (:attr:`Preview.for_user`) has the personal values as they will be
   sent, and only the elicitation shows it (it goes to the user, never to the model).
2. The user confirms (MCP elicitation, or the assistant passes the token back).
3. :meth:`WriteDesk.confirm` runs the call through the runner, as a one-step recipe
   (``practiceflow run`` would): the confirmed arguments are recorded as an event whose id
   is derived from the token, and :meth:`~practiceflow.runner.Runner.run_event` drives its
   run. The journal has one run per event, so a token confirmed twice (a retry, a double
   click, two assistants) finds the run it already started and sends nothing again; a write
   whose answer was lost is in doubt and held for a person, as every runner write is
   (``practiceflow runs``, the console).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from practiceflow.engine import run_action, validate_input
from practiceflow.engine.masking import mask_output, mask_request, mask_secrets
from practiceflow.errors import ConfigError, InputError, Issue
from practiceflow.hooks import ClientLike
from practiceflow.manifest import ActionModule, ModuleRegistry, lint
from practiceflow.manifest.validation import issues_for
from practiceflow.mcp._catalog import ToolEntry
from practiceflow.mcp._confirmation import (
    MAX_CODE_MISSES,
    Claimant,
    SealedState,
    arguments_digest,
    new_code,
    open_state,
    same_code,
    seal_state,
)
from practiceflow.runner import (
    Runner,
    RunOutcome,
    ValidRecipe,
    dry_run,
    validate_recipe,
)
from practiceflow.state import (
    EventRecord,
    PendingWrite,
    PendingWriteStore,
    RunRecord,
    StateStore,
)
from practiceflow.templating import utcnow

__all__ = ["EVENT_SOURCE", "Preview", "RunNotDone", "WriteDesk", "recipe_for_action", "run_key"]

logger = logging.getLogger("practiceflow.mcp")

#: The ``source`` of the events an assistant's confirmed writes are recorded under.
EVENT_SOURCE = "mcp"
#: The shipped trigger the generated one-step recipes name (their events are recorded by
#: this server, never received or polled).
_RECIPE_TRIGGER = "any_webhook_event"
#: How long a preview may wait for its confirmation.
DEFAULT_TTL = 15 * 60.0
#: How long an expired, never confirmed preview is kept before it is forgotten.
_KEEP_EXPIRED = timedelta(days=1)
#: Run statuses that end a run: a confirmation of its write answers with it, sending nothing.
_ENDED = ("succeeded", "failed", "in_doubt", "cancelled")
#: What a confirmation without elicitation needs, said to the assistant.
ASK_FOR_CODE = (
    "Ask the user for the 6-digit confirmation code the practiceflow server printed for "
    "this preview (in the terminal that started it, or the assistant app's MCP server log) "
    "and call confirm_write with confirm_token and user_code. The code is never in a tool "
    "result; do not guess it."
)

PiiPaths = frozenset[tuple[str, ...]]


class RunNotDone(Exception):
    """A confirmed write's run failed, is held for a person, or is being sent by another
    process; the message says which."""


def run_key(write_id: str) -> str:
    """The event id (and so the run) of a previewed write once confirmed.

    Args:
        write_id: the previewed write's id.

    Returns:
        ``mcp-`` and the id.
    """
    return "mcp-" + write_id


@dataclass(frozen=True)
class Preview:
    """A write that waits for its confirmation (kept in the store, see the module).

    Attributes:
        state: the sealed confirmation state handed to the client (``confirm_token``).
        write_id: the previewed write's id in the store.
        entry: the tool that was called.
        arguments: the call's arguments, as given (never shown to the assistant as such).
        shown: what the assistant sees: the rendered request(s), secrets and personal
            data masked.
        expires_at: when it stops being confirmable.
        for_user: the same request(s) with the personal values unmasked (secrets still
            masked), for the user's confirmation only: never in a tool result, a log line
            or the journal.
        code: the code the user gives when the client cannot ask the user itself; shown
            only on the server's standard error.
    """

    state: str = field(repr=False)
    write_id: str
    entry: ToolEntry
    arguments: dict[str, Any] = field(repr=False)
    shown: dict[str, Any]
    expires_at: datetime
    for_user: dict[str, Any] = field(repr=False)
    code: str = field(repr=False)


def recipe_for_action(module: ActionModule, folder: Path) -> Path:
    """Write (or keep) the one-step recipe that runs an action for an assistant.

    Each top-level input field is passed through from the event (``trigger``); a field the
    assistant did not give renders to None and is left out (the templating omission rule).
    The file stays after the server stops: ``practiceflow runs retry`` reads it.

    Args:
        module: the action.
        folder: where the generated recipes live.

    Returns:
        The recipe file.
    """
    fields = module.input_schema.get("properties", {})
    with_ = {name: f"{{{{ trigger[{name!r}] | default(None) }}}}" for name in fields}
    recipe = {
        "name": f"assistant: {module.key}",
        "description": f"{module.title}, called by an AI assistant through practiceflow mcp "
        "(generated; one step).",
        "trigger": {"use": _RECIPE_TRIGGER, "with": {"event": f"assistant.{module.key}"}},
        "steps": [{"id": module.key, "use": module.key, "with": with_}],
    }
    text = "# Generated by practiceflow mcp; edits are overwritten.\n" + json.dumps(
        recipe, indent=2
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module.key}.yaml"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def _pseudo_step(step_id: str) -> bool:
    """Whether a journal entry is the runner's own (``@trigger``...), not a recipe step."""
    return step_id.startswith("@")


def _mask_by_value(tree: Any, data: Any, pii: PiiPaths) -> Any:
    """Mask every personal value of ``data`` wherever it appears in ``tree``."""
    return mask_request({"v": tree}, data, pii).get("v")


class WriteDesk:
    """Carries out tool calls for one practice (see the module docstring).

    Args:
        store: the state store (journal, events, runs, previewed writes).
        client: the API client (its rate budget is the assistant's share).
        practice: the key runs are stored under (the Client ID, as for ``practiceflow run``).
        registry: the action modules.
        catalog: the tools, by name (to find a confirmed write's tool).
        recipes_dir: where the generated one-step recipes are written.
        writes_on: whether writes may be previewed and sent.
        show_personal: show personal fields of read results to the assistant.
        assistant_confirms: accept ``confirm_write`` without the user's code (the
            ``--confirm-by-assistant`` flag: the model's own yes is then enough).
        ttl: seconds a preview stays confirmable.

    Raises:
        ConfigError: the store cannot keep previewed writes.
    """

    def __init__(
        self,
        *,
        store: StateStore,
        client: ClientLike,
        practice: str,
        registry: ModuleRegistry,
        catalog: Mapping[str, ToolEntry],
        recipes_dir: Path,
        writes_on: bool,
        show_personal: bool = False,
        assistant_confirms: bool = False,
        ttl: float = DEFAULT_TTL,
    ) -> None:
        if not isinstance(store, PendingWriteStore):
            message = f"state store {type(store).__name__}: cannot keep previewed writes"
            raise ConfigError(message)
        self.store = store
        self.pending_writes: PendingWriteStore = store
        self.client = client
        self.practice = practice
        self.registry = registry
        self.catalog = catalog
        self.recipes_dir = recipes_dir
        self.writes_on = writes_on
        self.show_personal = show_personal
        self.assistant_confirms = assistant_confirms
        self.ttl = ttl
        self.claimant = Claimant()
        self._recipes: dict[str, ValidRecipe] = {}
        self._lock = threading.Lock()

    # -- reads ---------------------------------------------------------------------------

    def read(self, module: ActionModule, arguments: Mapping[str, Any]) -> Any:
        """Run a read action at once and return its output as the assistant may see it.

        Args:
            module: a read action.
            arguments: the tool's arguments.

        Returns:
            The mapped output, secrets masked (and personal fields, unless shown).

        Raises:
            PracticeflowError: the CLI's error (bad input: nothing was sent).
        """
        with self._lock:
            self._check_action_input(module, arguments)
            result = run_action(module, arguments, self.client, registry=self.registry)
        return self._shown_output(module, arguments, result.output)

    def _shown_output(self, module: ActionModule, arguments: Any, output: Any) -> Any:
        shown = mask_secrets(output, module.secret_paths)
        if self.show_personal:
            return shown
        shown = mask_output(shown, module.output.schema)
        return _mask_by_value(shown, arguments, module.pii_paths)

    # -- writes: preview -----------------------------------------------------------------

    def refuse_if_off(self, entry: ToolEntry) -> None:
        """Refuse a write when writes are off (nothing is rendered or sent).

        Raises:
            ConfigError: writes are off on this server.
        """
        if entry.writes and not self.writes_on:
            message = (
                f"{entry.name}: writes are off on this server, nothing was sent. The practice's "
                "administrator can start it with --allow-writes (and credentials that can write)."
            )
            raise ConfigError(message)

    def preview(self, entry: ToolEntry, arguments: Mapping[str, Any]) -> Preview:
        """Check a write's input and render its request(s); send nothing.

        Args:
            entry: a write tool or a recipe tool.
            arguments: the tool's arguments.

        Returns:
            The preview, kept under its confirm token until it expires.

        Raises:
            PracticeflowError: writes are off, or the input does not fit (nothing sent).
        """
        self.refuse_if_off(entry)
        data = dict(arguments)
        with self._lock:
            if entry.action is not None:
                shown = self._preview_action(entry.action, data)
                for_user = self._preview_action(entry.action, data, show_personal=True)
            elif entry.recipe is not None:
                moment = utcnow()  # both views render the templates at one time
                shown = self._preview_recipe(entry.recipe, data, moment)
                for_user = self._preview_recipe(entry.recipe, data, moment, show_personal=True)
            else:  # pragma: no cover - the server sends only writes and recipes here
                raise ConfigError(f"{entry.name}: not a write")
            preview = self._keep(entry, data, shown, for_user)
        logger.info("mcp %s: previewed (write %s)", entry.name, preview.write_id)
        return preview

    def _keep(
        self,
        entry: ToolEntry,
        data: dict[str, Any],
        shown: dict[str, Any],
        for_user: dict[str, Any],
    ) -> Preview:
        """Keep a previewed write in the store and seal its confirmation state."""
        now = self.store.now()
        write_id = secrets.token_hex(16)
        expires = now + timedelta(seconds=self.ttl)
        digest = arguments_digest(data)
        code = new_code()
        self.pending_writes.purge_pending_writes(now - _KEEP_EXPIRED)
        self.pending_writes.add_pending_write(
            self.practice, write_id, entry.name, {"arguments": data, "code": code}, digest, expires
        )
        bound = SealedState(write_id, self.practice, entry.name, digest, expires)
        state = seal_state(self.store.sealer, bound)
        return Preview(state, write_id, entry, data, shown, expires, for_user, code)

    def _preview_action(
        self, module: ActionModule, data: dict[str, Any], *, show_personal: bool = False
    ) -> dict[str, Any]:
        self._check_action_input(module, data)
        result = run_action(
            module,
            data,
            self.client,
            dry_run=True,
            registry=self.registry,
            show_personal=show_personal,
        )
        request = result.request
        if not show_personal:
            request = _mask_by_value(request, data, module.pii_paths)
        return {"tool": module.key, "request": request, "warnings": list(result.warnings)}

    def _preview_recipe(
        self,
        recipe: ValidRecipe,
        data: dict[str, Any],
        now: datetime,
        *,
        show_personal: bool = False,
    ) -> dict[str, Any]:
        issues = issues_for(recipe.trigger.output_validator, data, file="tool arguments")
        if issues:
            raise InputError(recipe.trigger.key, issues)
        steps = dry_run(
            recipe, trigger=data, client=self.client, now=now, show_personal=show_personal
        )
        pii = frozenset() if show_personal else self._recipe_pii(recipe)
        return {
            "recipe": recipe.name,
            "steps": [
                {
                    "step": step.step_id,
                    "use": step.use,
                    "would": step.status,
                    "request": _mask_by_value(step.request, data, pii),
                    "note": step.note,
                }
                for step in steps
            ],
        }

    def _check_action_input(self, module: ActionModule, data: Any) -> None:
        if not isinstance(data, Mapping):
            got = type(data).__name__
            raise InputError(
                module.key, [Issue("tool arguments", 0, 0, "", f"got {got}; expected an object")]
            )
        issues = validate_input(module, data, file="tool arguments")
        if issues:
            raise InputError(module.key, issues)

    # -- writes: confirm -----------------------------------------------------------------

    def confirm(
        self,
        state: str,
        *,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        code: str | None = None,
        person_confirmed: bool = False,
    ) -> dict[str, Any]:
        """Send a previewed write through the runner's journal, at most once.

        Any process sharing the store may confirm a write another one previewed. A write
        already confirmed answers with its run's result and sends nothing; one that
        another live process is sending is refused for now (nothing sent by this call);
        one whose sender died mid-send is driven on by the runner, which reads the write
        back rather than sending it again on a guess, or holds it for a person.

        Args:
            state: the preview's sealed state (``confirm_token``, or ``requestState``).
            tool: the tool the confirmation came with (an ``input_required`` retry).
            arguments: the arguments it came with: they must be the previewed ones.
            code: the user's confirmation code (``confirm_write`` without elicitation).
            person_confirmed: the user said yes through the client itself (elicitation),
                or the call needs no yes (a recipe that only reads).

        Returns:
            ``run_id``, ``status`` and the step outputs the assistant may see.

        Raises:
            ConfigError: the state is not this store's, altered, another practice's or
                tool's, for other arguments, expired, or the code is missing or wrong;
                nothing was sent.
            RunNotDone: the run failed, is held for a person, or another process is
                sending it now.
        """
        bound = self._bound(state, tool, arguments)
        key = run_key(bound.write_id)
        with self._lock:
            run = self._run_of(key)
            row = self.pending_writes.get_pending_write(self.practice, bound.write_id)
            kept = row.sealed if row is not None and isinstance(row.sealed, dict) else {}
            given = dict(kept.get("arguments") or {})
            if run is not None and run.status in _ENDED:
                return self._settled(run.run_id, run.status, None, given)
            if run is None:
                self._check_confirmable(bound, row, code, person_confirmed)
            elif row is None:
                message = (
                    f"run {run.run_id} is unfinished; the next start of 'practiceflow mcp "
                    "--allow-writes' finishes it (reading the write back first). Nothing was "
                    "sent by this call."
                )
                raise RunNotDone(message)
            entry = self._entry(bound.tool)
            self.refuse_if_off(entry)
            holder = self.pending_writes.claim_pending_write(
                self.practice, bound.write_id, self.claimant.name, self._may_take
            )
            if holder is not None:
                message = (
                    f"{bound.tool}: another practiceflow mcp process ({holder}) is sending this "
                    "write now; nothing was sent by this call. Confirm again in a minute for "
                    "its result."
                )
                raise RunNotDone(message)
            try:
                outcome = self._run(entry, given, key)
            finally:
                self.pending_writes.release_pending_write(
                    self.practice, bound.write_id, self.claimant.name
                )
        logger.info("mcp %s: run %s %s", entry.name, outcome.run_id, outcome.status)
        return self._settled(outcome.run_id, outcome.status, outcome, given)

    def _bound(
        self, state: str, tool: str | None, arguments: Mapping[str, Any] | None
    ) -> SealedState:
        """The sealed state, checked against this server and what came with it."""
        bound = open_state(self.store.sealer, state)
        if bound.practice != self.practice:
            message = (
                "confirm_token: this confirmation is another practice's (previewed by its "
                "server); nothing was sent"
            )
            raise ConfigError(message)
        if tool is not None and bound.tool != tool:
            message = (
                f"{tool}: the confirmation is of a {bound.tool} preview; nothing was sent. "
                "Call the tool again."
            )
            raise ConfigError(message)
        if arguments is not None and arguments_digest(arguments) != bound.digest:
            message = (
                f"{bound.tool}: the arguments are not the previewed ones; nothing was sent. "
                "Call the tool again for a preview of these."
            )
            raise ConfigError(message)
        return bound

    def _check_confirmable(
        self,
        bound: SealedState,
        row: PendingWrite | None,
        code: str | None,
        person_confirmed: bool,
    ) -> None:
        """Refuse a first confirmation that is expired, voided or lacks the user's code."""
        fresh = "Call the tool again for a fresh preview and ask the user to confirm it."
        if row is None or row.tool != bound.tool or row.digest != bound.digest:
            message = f"confirm_token: its preview is no longer kept; nothing was sent. {fresh}"
            raise ConfigError(message)
        if self.store.now() >= bound.expires_at:
            expired = bound.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
            message = f"confirm_token: the preview expired at {expired}; nothing was sent. {fresh}"
            raise ConfigError(message)
        if row.code_misses >= MAX_CODE_MISSES:
            message = (
                "confirm_write: too many wrong codes voided this preview; nothing was sent. "
                + fresh
            )
            raise ConfigError(message)
        if person_confirmed or self.assistant_confirms:
            return
        if not code:
            message = f"confirm_write: user_code is missing; nothing was sent. {ASK_FOR_CODE}"
            raise ConfigError(message)
        kept = row.sealed if isinstance(row.sealed, dict) else {}
        if not same_code(str(kept.get("code")), code):
            misses = self.pending_writes.miss_pending_code(self.practice, bound.write_id)
            left = max(MAX_CODE_MISSES - misses, 0)
            message = (
                f"confirm_write: user_code is not this preview's code ({left} tries left); "
                f"nothing was sent. {ASK_FOR_CODE}"
            )
            raise ConfigError(message)

    def _may_take(self, holder: str, since: datetime) -> bool:
        return self.claimant.may_take(holder, since, self.store.now())

    def _run_of(self, key: str) -> RunRecord | None:
        runs = self.store.list_runs(practice=self.practice, event_id=key, limit=1)
        return runs[0] if runs else None

    def _entry(self, tool: str) -> ToolEntry:
        entry = self.catalog.get(tool)
        if entry is None or entry.kind not in ("write", "recipe"):
            message = (
                f"{tool}: this server does not offer that tool now (a recipe not given?); "
                "nothing was sent"
            )
            raise ConfigError(message)
        return entry

    def resume_pending(self) -> list[RunOutcome]:
        """Finish the confirmed calls a stopped server left unfinished.

        A confirmed call is recorded as an event before its run starts; a server stopped
        (or killed) before the run ended leaves that event pending. Its run is driven now,
        by the runner's rules: a step already done is not sent again, a write that left
        without its answer being journaled is in doubt and read back or held. A call that
        another live process is sending is left to it.

        Returns:
            The outcome of each run driven. Events of a tool not offered now (a recipe
            not given, writes off) are left pending and logged.
        """
        outcomes: list[RunOutcome] = []
        with self._lock:
            for event in self.store.pending_events(self.practice, 1000, source=EVENT_SOURCE):
                name = event.event_key.removeprefix("assistant.")
                entry = self.catalog.get(name)
                if entry is None or not self.writes_on or entry.kind not in ("write", "recipe"):
                    logger.warning(
                        "mcp %s: a confirmed call (event %s) is unfinished; start the server "
                        "with --allow-writes (and its recipe) to finish it",
                        name,
                        event.event_id,
                    )
                    continue
                outcome = self._resume(entry, event)
                if outcome is not None:
                    logger.warning(
                        "mcp %s: resumed run %s: %s", name, outcome.run_id, outcome.status
                    )
                    outcomes.append(outcome)
        return outcomes

    def _resume(self, entry: ToolEntry, event: EventRecord) -> RunOutcome | None:
        write_id = event.event_id.removeprefix("mcp-")
        claimed = self.pending_writes.get_pending_write(self.practice, write_id) is not None
        if claimed:
            holder = self.pending_writes.claim_pending_write(
                self.practice, write_id, self.claimant.name, self._may_take
            )
            if holder is not None:
                logger.info("mcp %s: %s is sending write %s", entry.name, holder, write_id)
                return None
        runner = Runner(self._recipe_of(entry), self.store, self.client, practice=self.practice)
        try:
            return runner.run_event(event)
        finally:
            if claimed:
                self.pending_writes.release_pending_write(
                    self.practice, write_id, self.claimant.name
                )

    def _run(self, entry: ToolEntry, arguments: dict[str, Any], key: str) -> RunOutcome:
        event_key = f"assistant.{entry.name}"
        self.store.record_event(self.practice, EVENT_SOURCE, event_key, key, arguments)
        event = self.store.get_event(self.practice, EVENT_SOURCE, key)
        if event is None:  # pragma: no cover - recorded just above
            raise ConfigError(f"the event of {entry.name} was not recorded")
        recipe = self._recipe_of(entry)
        outcome = Runner(recipe, self.store, self.client, practice=self.practice).run_event(event)
        if outcome is None:  # pragma: no cover - our events are never test deliveries
            raise ConfigError(f"{entry.name}: the run did not start")
        return outcome

    def _settled(
        self,
        run_id: str,
        status: str,
        outcome: RunOutcome | None,
        arguments: Mapping[str, Any],
    ) -> dict[str, Any]:
        hint = f"see 'practiceflow runs show {run_id}'"
        if status == "in_doubt":
            cause = outcome.error if outcome is not None else None
            detail = cause.get("message", "") if isinstance(cause, Mapping) else ""
            message = (
                f"run {run_id}: the write may or may not have reached the API, so it is held "
                f"for a person and will not be sent again on a guess; {hint}. {detail}"
            )
            raise RunNotDone(message.strip())
        if status == "failed":
            cause = outcome.error if outcome is not None else self._run_error(run_id)
            detail = cause.get("message", "") if isinstance(cause, Mapping) else str(cause or "")
            message = f"run {run_id} failed: {detail or hint}"
            raise RunNotDone(message)
        steps = [s for s in self.store.get_steps(run_id) if not _pseudo_step(s.step_id)]
        outputs: dict[str, Any] = {}
        for step in steps:
            action = self.registry.actions.get(step.step_id.split("[")[0])
            if action is not None and step.output is not None:
                outputs[step.step_id] = self._write_output(action, arguments, step.output)
        return {
            "run_id": run_id,
            "status": status,
            "steps": {step.step_id: step.status for step in steps},
            "output": outputs,
            "journal": hint,
        }

    def _run_error(self, run_id: str) -> Any:
        run = self.store.get_run(run_id)
        return run.error if run is not None else None

    def _write_output(self, module: ActionModule, arguments: Any, output: Any) -> Any:
        # A write's answer always has personal data masked: it was typed by the user, and
        # what the assistant needs next are the identifiers.
        shown = mask_output(mask_secrets(output, module.secret_paths), module.output.schema)
        return _mask_by_value(shown, arguments, module.pii_paths)

    # -- helpers -------------------------------------------------------------------------

    def _recipe_of(self, entry: ToolEntry) -> ValidRecipe:
        if entry.recipe is not None:
            return entry.recipe
        module = entry.action
        if module is None:  # pragma: no cover - only writes and recipes are previewed
            raise ConfigError(f"{entry.name}: not a write")
        recipe = self._recipes.get(module.key)
        if recipe is None:
            path = recipe_for_action(module, self.recipes_dir)
            recipe = validate_recipe(path, registry=self.registry)
            self._recipes[module.key] = recipe
        return recipe

    def _pii(self, entry: ToolEntry) -> PiiPaths:
        if entry.action is not None:
            return entry.action.pii_paths
        if entry.recipe is not None:
            return self._recipe_pii(entry.recipe)
        return frozenset()

    @staticmethod
    def _recipe_pii(recipe: ValidRecipe) -> PiiPaths:
        return frozenset(lint.pii_paths(recipe.trigger.output_schema))

    def error_text(self, entry: ToolEntry, arguments: Any, exc: BaseException) -> str:
        """An error's message as the assistant may read it (the call's personal values
        masked, in case the API echoed one)."""
        return str(_mask_by_value(str(exc), arguments, self._pii(entry)))
