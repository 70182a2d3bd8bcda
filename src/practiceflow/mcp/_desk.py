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

import hashlib
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from practiceflow.engine import run_action, validate_input
from practiceflow.engine.masking import mask_output, mask_request, mask_secrets
from practiceflow.errors import ConfigError, InputError, Issue
from practiceflow.hooks import ClientLike
from practiceflow.manifest import ActionModule, ModuleRegistry, lint
from practiceflow.manifest.validation import issues_for
from practiceflow.mcp._catalog import ToolEntry
from practiceflow.runner import (
    Runner,
    RunOutcome,
    ValidRecipe,
    dry_run,
    validate_recipe,
)
from practiceflow.state import StateStore
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

PiiPaths = frozenset[tuple[str, ...]]


class RunNotDone(Exception):
    """A confirmed write's run failed or is held for a person; the message says which."""


def run_key(token: str) -> str:
    """The event id (and so the run) a confirm token stands for.

    A digest, so that the journal never holds the token itself (whoever holds a token can
    confirm its write).

    Args:
        token: the confirm token.

    Returns:
        ``mcp-`` and 32 hex digits.
    """
    return "mcp-" + hashlib.sha256(token.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Preview:
    """A write that waits for its confirmation.

    Attributes:
        token: the confirm token.
        entry: the tool that was called.
        arguments: the call's arguments, as given (never shown to the assistant as such).
        shown: what the assistant sees: the rendered request(s), secrets and personal
            data masked.
        expires: when it stops being confirmable (the desk's clock).
        for_user: the same request(s) with the personal values unmasked (secrets still
            masked), for the user's confirmation only: never in a tool result, a log line
            or the journal.
    """

    token: str
    entry: ToolEntry
    arguments: dict[str, Any] = field(repr=False)
    shown: dict[str, Any]
    expires: float
    for_user: dict[str, Any] = field(repr=False)


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
        store: the state store (journal, events, runs).
        client: the API client (its rate budget is the assistant's share).
        practice: the key runs are stored under (the Client ID, as for ``practiceflow run``).
        registry: the action modules.
        recipes_dir: where the generated one-step recipes are written.
        writes_on: whether writes may be previewed and sent.
        show_personal: show personal fields of read results to the assistant.
        ttl: seconds a preview stays confirmable.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        *,
        store: StateStore,
        client: ClientLike,
        practice: str,
        registry: ModuleRegistry,
        recipes_dir: Path,
        writes_on: bool,
        show_personal: bool = False,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.client = client
        self.practice = practice
        self.registry = registry
        self.recipes_dir = recipes_dir
        self.writes_on = writes_on
        self.show_personal = show_personal
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[str, Preview] = {}
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
            token = "pfc_" + secrets.token_urlsafe(16)
            expires = self._clock() + self.ttl
            preview = Preview(token, entry, data, shown, expires, for_user=for_user)
            self._forget_expired()
            self._pending[token] = preview
        logger.info("mcp %s: previewed (run key %s)", entry.name, run_key(token))
        return preview

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

    def pending(self, token: str) -> Preview | None:
        """The preview a token stands for, while it can be confirmed."""
        with self._lock:
            self._forget_expired()
            return self._pending.get(token)

    def confirm(self, token: str) -> dict[str, Any]:
        """Send a previewed write through the runner's journal, once per token.

        Args:
            token: the preview's confirm token.

        Returns:
            ``run_id``, ``status`` and the step outputs the assistant may see.

        Raises:
            ConfigError: unknown or expired token, or writes are off.
            RunNotDone: the run failed (the API refused the write) or is held for a person
                (the write may or may not have been acted on).
        """
        key = run_key(token)
        with self._lock:
            self._forget_expired()
            preview = self._pending.get(token)
            if preview is None:
                done = self.store.list_runs(practice=self.practice, event_id=key, limit=1)
                if done:  # confirmed before, and its preview has expired since
                    return self._settled(done[0].run_id, done[0].status, None)
                message = (
                    "confirm_token: got an unknown or expired token; nothing was sent. Call "
                    "the tool again for a fresh preview and ask the user to confirm it."
                )
                raise ConfigError(message)
            self.refuse_if_off(preview.entry)
            recipe = self._recipe_of(preview.entry)
            outcome = self._run(recipe, preview, key)
        logger.info("mcp %s: run %s %s", preview.entry.name, outcome.run_id, outcome.status)
        return self._settled(outcome.run_id, outcome.status, outcome, preview)

    def resume_pending(self, catalog: Mapping[str, ToolEntry]) -> list[RunOutcome]:
        """Finish the confirmed calls a stopped server left unfinished.

        A confirmed call is recorded as an event before its run starts; a server stopped
        (or killed) before the run ended leaves that event pending. Its run is driven now,
        by the runner's rules: a step already done is not sent again, a write that left
        without its answer being journaled is in doubt and read back or held.

        Args:
            catalog: the tools, to find each event's action or recipe.

        Returns:
            The outcome of each run driven. Events of a tool not offered now (a recipe
            not given, writes off) are left pending and logged.
        """
        outcomes: list[RunOutcome] = []
        with self._lock:
            for event in self.store.pending_events(self.practice, 1000, source=EVENT_SOURCE):
                name = event.event_key.removeprefix("assistant.")
                entry = catalog.get(name)
                if entry is None or not self.writes_on or entry.kind not in ("write", "recipe"):
                    logger.warning(
                        "mcp %s: a confirmed call (event %s) is unfinished; start the server "
                        "with --allow-writes (and its recipe) to finish it",
                        name,
                        event.event_id,
                    )
                    continue
                runner = Runner(
                    self._recipe_of(entry), self.store, self.client, practice=self.practice
                )
                outcome = runner.run_event(event)
                if outcome is not None:
                    logger.warning(
                        "mcp %s: resumed run %s: %s", name, outcome.run_id, outcome.status
                    )
                    outcomes.append(outcome)
        return outcomes

    def _run(self, recipe: ValidRecipe, preview: Preview, key: str) -> RunOutcome:
        event_key = f"assistant.{preview.entry.name}"
        self.store.record_event(self.practice, EVENT_SOURCE, event_key, key, preview.arguments)
        event = self.store.get_event(self.practice, EVENT_SOURCE, key)
        if event is None:  # pragma: no cover - recorded just above
            raise ConfigError(f"the event of {preview.entry.name} was not recorded")
        outcome = Runner(recipe, self.store, self.client, practice=self.practice).run_event(event)
        if outcome is None:  # pragma: no cover - our events are never test deliveries
            raise ConfigError(f"{preview.entry.name}: the run did not start")
        return outcome

    def _settled(
        self,
        run_id: str,
        status: str,
        outcome: RunOutcome | None,
        preview: Preview | None = None,
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
            cause = outcome.error if outcome is not None else None
            detail = cause.get("message", "") if isinstance(cause, Mapping) else str(cause or "")
            message = f"run {run_id} failed: {detail or hint}"
            raise RunNotDone(message)
        steps = [s for s in self.store.get_steps(run_id) if not _pseudo_step(s.step_id)]
        outputs: dict[str, Any] = {}
        for step in steps:
            action = self.registry.actions.get(step.step_id.split("[")[0])
            arguments = preview.arguments if preview is not None else {}
            if action is not None and step.output is not None:
                outputs[step.step_id] = self._write_output(action, arguments, step.output)
        return {
            "run_id": run_id,
            "status": status,
            "steps": {step.step_id: step.status for step in steps},
            "output": outputs,
            "journal": hint,
        }

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

    def _forget_expired(self) -> None:
        now = self._clock()
        for token in [t for t, p in self._pending.items() if p.expires <= now]:
            del self._pending[token]

    def error_text(self, entry: ToolEntry, arguments: Any, exc: BaseException) -> str:
        """An error's message as the assistant may read it (the call's personal values
        masked, in case the API echoed one)."""
        return str(_mask_by_value(str(exc), arguments, self._pii(entry)))
