"""What the console masks before anything is rendered or returned as JSON.

The journal is masked already (:mod:`practiceflow.engine.masking`); the console masks again,
because a journal may come from another tool or a bug and a page is seen by many. On copies:
personal data by the ``x-pii`` paths of the action and trigger (values also wherever they
reappear); secrets by field name and ``Bearer``/``Basic`` text; and every known secret value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from practiceflow.engine.masking import (
    MASK,
    mask_input,
    mask_output,
    mask_request,
    mask_values,
    output_pii,
    personal_values,
)
from practiceflow.manifest import ActionModule, ModuleRegistry, TriggerModule, lint

#: Every field of a payload (top-level keys kept, values masked).
_WHOLE: frozenset[tuple[str, ...]] = frozenset({()})

_SECRET_NAME = re.compile(
    r"secret|passw|token|authori[sz]ation|api[-_]?key|cookie|credential|signature",
    re.IGNORECASE,
)
_CREDENTIAL_TEXT = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
#: Secrets shorter than this are not searched for inside other text (too many false hits).
_MIN_SECRET = 6


class Redactor:
    """Masks journal data for display (see the module docstring).

    Args:
        registry: modules whose ``x-pii`` tags apply (shipped plus the user's).
        secrets: secret values to hide wherever they appear.
    """

    def __init__(self, registry: ModuleRegistry | None, secrets: Iterable[str] = ()) -> None:
        self.registry = registry
        self._secrets: set[str] = {value for value in secrets if len(value) >= _MIN_SECRET}

    def add_secrets(self, values: Iterable[str]) -> None:
        """Learn more secret values (subscriptions made since the console started)."""
        self._secrets.update(value for value in values if len(value) >= _MIN_SECRET)

    def _action(self, use: Any) -> ActionModule | None:
        return self.registry.actions.get(use) if self.registry and isinstance(use, str) else None

    def _trigger(self, key: Any) -> TriggerModule | None:
        return self.registry.triggers.get(key) if self.registry and isinstance(key, str) else None

    def secrets(self, tree: Any) -> Any:
        """Mask secrets by field name, credential text and known value."""
        if isinstance(tree, Mapping):
            return {
                key: MASK if _SECRET_NAME.search(str(key)) else self.secrets(child)
                for key, child in tree.items()
            }
        if isinstance(tree, list | tuple):
            return [self.secrets(child) for child in tree]
        if isinstance(tree, str):
            return self.text(tree)
        return tree

    def text(self, text: str) -> str:
        """Mask credentials and known secrets inside one piece of text."""
        text = _CREDENTIAL_TEXT.sub(lambda found: f"{found.group(1)} {MASK}", text)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def request(self, entry: Any) -> Any:
        """Mask a journaled request entry (``{"use", "input", "request"}``)."""
        if not isinstance(entry, Mapping):
            return self.secrets(entry)
        action = self._action(entry.get("use"))
        shown = dict(entry)
        if action is not None and action.pii_paths:
            raw = entry.get("input")
            values = personal_values(raw, action.pii_paths)
            if raw is not None:
                shown["input"] = mask_input(raw, action.pii_paths)
            inner = entry.get("request")
            if isinstance(inner, Mapping) and values:
                shown["request"] = mask_request(inner, raw, action.pii_paths)
        return self.secrets(shown)

    def output(self, use: Any, output: Any) -> Any:
        """Mask a step's output by its action's output schema."""
        action = self._action(use)
        if action is not None:
            output = mask_output(output, action.output.schema)
            # A field named like a personal input field is personal in the output too,
            # whether or not the output schema repeats the tag.
            names = frozenset(path[-1] for path in action.pii_paths if path)
            output = _mask_names(output, names)
        return self.secrets(output)

    def event(self, origin: Any) -> Any:
        """Mask the journaled event of a run (its ``origin``)."""
        if not isinstance(origin, Mapping):
            return self.secrets(origin)
        shown = dict(origin)
        if "payload" in shown:
            pii = self._event_pii(origin)
            if pii:
                values = personal_values(shown["payload"], pii)
                shown["payload"] = mask_values(mask_input(shown["payload"], pii), values)
        return self.secrets(shown)

    def _event_pii(self, origin: Mapping[str, Any]) -> frozenset[tuple[str, ...]]:
        """The personal paths of a run's event: its trigger's, or, for an event no trigger
        describes (an assistant's arguments, ``source: mcp``), the whole payload: without a
        schema nothing can be shown as surely not personal."""
        trigger = self._trigger(origin.get("source"))
        if trigger is None:
            return _WHOLE
        return frozenset(lint.pii_paths(trigger.output_schema))

    def personal(self, use: Any, entry: Any) -> frozenset[str]:
        """The personal values of a journaled request entry's input."""
        action = self._action(use)
        if action is None or not action.pii_paths or not isinstance(entry, Mapping):
            return frozenset()
        return personal_values(entry.get("input"), action.pii_paths)

    def output_personal(self, use: Any, output: Any) -> frozenset[str]:
        """The personal values of a step's output (by its action's output schema)."""
        action = self._action(use)
        schema = action.output.schema if action is not None else None
        if not isinstance(schema, Mapping):
            return frozenset()
        return personal_values(output, output_pii(output, schema))

    def event_personal(self, origin: Any) -> frozenset[str]:
        """The personal values of a run's journaled event (by its trigger's schema)."""
        if not isinstance(origin, Mapping):
            return frozenset()
        return personal_values(origin.get("payload"), self._event_pii(origin))

    def error(self, use: Any, error: Any, input_entry: Any = None) -> Any:
        """Mask an error or reason, including personal values of the step's input."""
        return self.secrets(mask_values(error, self.personal(use, input_entry)))


def _mask_names(tree: Any, names: frozenset[str]) -> Any:
    if not names:
        return tree
    if isinstance(tree, Mapping):
        return {
            key: MASK if key in names and child is not None else _mask_names(child, names)
            for key, child in tree.items()
        }
    if isinstance(tree, list):
        return [_mask_names(child, names) for child in tree]
    return tree
