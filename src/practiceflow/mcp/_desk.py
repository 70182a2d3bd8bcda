"""Where tool calls are carried out: reads at once, writes previewed (:meth:`WriteDesk.preview`,
a dry run, kept sealed in the store so any process sharing it can confirm), then sent once
(:mod:`._sending`). The assistant's view masks secrets and personal data; the user's view
(:attr:`Preview.for_user`) goes only to the elicitation. Synchronous: the server calls it
from worker threads, one call at a time.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from practiceflow.engine import run_action, validate_input
from practiceflow.engine.masking import mask_secrets
from practiceflow.errors import ConfigError, InputError
from practiceflow.manifest import ActionModule, lint
from practiceflow.manifest.validation import issues_for
from practiceflow.mcp._catalog import ToolEntry
from practiceflow.mcp._confirmation import SealedState, arguments_digest, new_code, seal_state
from practiceflow.mcp._sending import PiiPaths, WriteSender, mask_by_value, masked_output
from practiceflow.runner import ValidRecipe, dry_run
from practiceflow.templating import utcnow

logger = logging.getLogger("practiceflow.mcp")

#: How long an expired, never confirmed preview is kept before it is forgotten.
_KEEP_EXPIRED = timedelta(days=1)


@dataclass(frozen=True)
class Preview:
    """A write that waits for its confirmation. ``state`` is the sealed ``confirm_token``;
    ``shown`` is the assistant's masked view; ``for_user`` (personal values unmasked) and
    ``code`` (printed on the server's standard error) never go to a tool result, a log line
    or the journal."""

    state: str = field(repr=False)
    write_id: str
    entry: ToolEntry
    shown: dict[str, Any]
    expires_at: datetime
    for_user: dict[str, Any] = field(repr=False)
    code: str = field(repr=False)


class WriteDesk(WriteSender):
    """Carries out tool calls for one practice (see the module docstring)."""

    #: How long a preview may wait for its confirmation (seconds).
    ttl = 15 * 60.0

    def read(self, module: ActionModule, arguments: Mapping[str, Any]) -> Any:
        """Run a read action at once; its output with secrets (and, unless shown, personal
        fields) masked. Raises the CLI's PracticeflowError (bad input: nothing sent)."""
        with self._lock:
            self._check_action_input(module, arguments)
            result = run_action(module, arguments, self.client, registry=self.registry)
        if self.show_personal:
            return mask_secrets(result.output, module.secret_paths)
        return masked_output(module, arguments, result.output)

    def preview(self, entry: ToolEntry, arguments: Mapping[str, Any]) -> Preview:
        """Check a write's input and render its request(s), sending nothing; kept in the
        store (and confirmable) until it expires. Raises PracticeflowError when writes are
        off or the input does not fit."""
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
        state = seal_state(self.pending_writes.sealer, bound)
        return Preview(state, write_id, entry, shown, expires, for_user, code)

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
            request = mask_by_value(request, data, module.pii_paths)
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
                    "request": mask_by_value(step.request, data, pii),
                    "note": step.note,
                }
                for step in steps
            ],
        }

    def _check_action_input(self, module: ActionModule, data: Mapping[str, Any]) -> None:
        issues = validate_input(module, data, file="tool arguments")
        if issues:
            raise InputError(module.key, issues)

    @staticmethod
    def _recipe_pii(recipe: ValidRecipe) -> PiiPaths:
        return frozenset(lint.pii_paths(recipe.trigger.output_schema))

    def error_text(self, entry: ToolEntry, arguments: Any, exc: BaseException) -> str:
        """An error's message as the assistant may read it (the call's personal values
        masked, in case the API echoed one)."""
        pii = self._recipe_pii(entry.recipe) if entry.recipe is not None else frozenset()
        if entry.action is not None:
            pii = entry.action.pii_paths
        return str(mask_by_value(str(exc), arguments, pii))
