"""Checking input against declared choices (``x-choices``) before anything is sent.

Each list is read once through its list action; offline nothing is checked. Values compare as
case-insensitive text, as the API resolves names; the module's own checks stay the stricter judge.
"""

from __future__ import annotations

from typing import Any

from practiceflow.engine.masking import values_at
from practiceflow.engine.run import run_action
from practiceflow.errors import Issue
from practiceflow.hooks import ClientLike
from practiceflow.manifest.choices import (
    ChoiceSource,
    accepted_values,
    options_from_rows,
)
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry
from practiceflow.manifest.yamlpos import Located

#: Valid values named in one message at most.
SHOWN = 20


def _valid_text(options: list[tuple[Any, str]]) -> str:
    shown = [value for value, _label in options[:SHOWN]]
    more = len(options) - len(shown)
    text = repr(shown)
    return f"{text} and {more} more" if more > 0 else text


def check_choices(
    module: ActionModule | TriggerModule,
    data: Any,
    client: ClientLike,
    registry: ModuleRegistry,
    *,
    file: str = "input",
    located: Located | None = None,
) -> list[Issue]:
    """Compare the input's choice fields with the lists they come from (a failed read of a
    list raises, and the caller sends nothing)."""
    issues: list[Issue] = []
    lists: dict[tuple[str, str], list[Any]] = {}
    for path, source in module.choices.items():
        places = list(values_at(data, path))
        if not places:
            continue
        rows = _rows(source, client, registry, lists)
        accepted = accepted_values(rows, source)
        for at, value in places:
            if str(value).casefold() in accepted:
                continue
            options = options_from_rows(rows, source)
            message = (
                f"got {value!r}; valid values are {_valid_text(options)} (from {source.action})"
            )
            issues.append((located or Located(None)).issue(file, at, message))
    return issues


def _rows(
    source: ChoiceSource,
    client: ClientLike,
    registry: ModuleRegistry,
    cache: dict[tuple[str, str], list[Any]],
) -> list[Any]:
    key = (source.action, repr(sorted(source.with_.items())))
    if key not in cache:
        result = run_action(source.action, dict(source.with_), client, registry=registry)
        items = result.output.get("items")
        cache[key] = list(items) if isinstance(items, list) else []
    return cache[key]
