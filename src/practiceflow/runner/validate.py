"""Checking a recipe before anything runs: every problem at once, each with file, line, field.

:func:`validate_recipe` is the one recipe validator: the file's own checks, then against the
modules (``use`` with "did you mean", literal inputs, ``retry`` only on reads, no write on
read-only credentials, template paths against output schemas; samples play no part).
:func:`build_context` gives templates the names checked here (docs/recipes-reference.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from practiceflow.engine import validate_input
from practiceflow.errors import Issue, ManifestError
from practiceflow.manifest import ActionModule, Recipe, TriggerModule
from practiceflow.manifest.lint import check_names
from practiceflow.manifest.loader import read_located, recipe_from
from practiceflow.manifest.module_registry import ModuleRegistry, default_registry
from practiceflow.manifest.references import (
    Position,
    Target,
    check_references,
    items_position,
    literal_schema,
    position,
    references_of,
)
from practiceflow.manifest.validation import issues_for
from practiceflow.manifest.yamlpos import JsonPath, Located, format_path
from practiceflow.runner.local import LOCAL_STEPS, LocalStep
from practiceflow.templating import CompiledTemplate, is_template, iter_templates

StepAction = ActionModule | LocalStep


@dataclass(frozen=True)
class ValidRecipe:
    """A recipe that passed every check, with each step's module (``notes``: not checked)."""

    recipe: Recipe
    actions: Mapping[str, StepAction]
    trigger: TriggerModule
    source: str
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The recipe's name (runs are keyed by it)."""
        return self.recipe.name

    def writes(self) -> list[str]:
        """Ids of the steps whose action needs write access."""
        return [step.id for step in self.recipe.steps if self.actions[step.id].needs_write]


def build_context(
    trigger: Any,
    steps: Mapping[str, Any],
    variables: Mapping[str, Any],
    now: datetime,
    item: Any = None,
) -> dict[str, Any]:
    """The template context of one step (``item``: the current ``for_each`` element)."""
    return {
        "trigger": trigger,
        "steps": dict(steps),
        "vars": dict(variables),
        "now": now,
        "item": item,
    }


def iteration_id(step_id: str, index: int) -> str:
    """The journal id of one ``for_each`` iteration: ``stepid[index]``."""
    return f"{step_id}[{index}]"


def _issue(file: str, located: Located, path: JsonPath, message: str) -> Issue:
    line, column = located.where(path)
    return Issue(file, line, column, format_path(path), message)


def _template_paths(tree: Any, at: JsonPath = ()) -> list[JsonPath]:
    """Paths of every template string in a raw ``with`` tree."""
    if isinstance(tree, str):
        return [at] if is_template(tree) else []
    if isinstance(tree, Mapping):
        return [p for key, child in tree.items() for p in _template_paths(child, (*at, key))]
    if isinstance(tree, list):
        return [p for i, child in enumerate(tree) for p in _template_paths(child, (*at, i))]
    return []


def _key_problem(message: str) -> bool:
    """Whether an issue is about which keys are present (literal even beside templates)."""
    return (
        "not a known field" in message
        or "is not allowed here" in message
        or message.startswith("needs ")
        or "required field is missing" in message
    )


def _literal_issues(
    action: StepAction, raw: Mapping[str, Any], at: JsonPath, file: str, located: Located
) -> list[Issue]:
    """Input issues that do not depend on a template's value."""
    data = raw.get("with", {})
    prefix = (*at, "with")
    if isinstance(action, ActionModule):
        found = validate_input(action, data, file=file, located=located, prefix=prefix)
    else:
        found = issues_for(action.input_validator, data, file=file, located=located, prefix=prefix)
    templated = [format_path((*prefix, *path)) for path in _template_paths(data)]
    if not templated:
        return found
    kept: list[Issue] = []
    for issue in found:
        under = any(issue.path == t or issue.path.startswith((t + ".", t + "[")) for t in templated)
        holds = any(t.startswith((issue.path + ".", issue.path + "[")) for t in templated)
        if under or (holds and not _key_problem(issue.message)):
            continue
        kept.append(issue)
    return kept


def _use_issues(
    raw: Mapping[str, Any],
    at: JsonPath,
    registry: ModuleRegistry,
    file: str,
    located: Located,
    can_write: bool | None,
) -> tuple[StepAction | None, list[Issue]]:
    key = raw["use"]
    action: StepAction | None = registry.actions.get(key) or LOCAL_STEPS.get(key)
    if action is None:
        known = [*registry.actions, *LOCAL_STEPS]
        where = (*at, "use")
        return None, check_names(key, known, what="action", at=where, file=file, located=located)
    issues = _literal_issues(action, raw, at, file, located)
    if "retry" in raw and action.needs_write:
        message = (
            f"retry is for read steps only; {key!r} writes, and writes are never retried "
            "blindly (an in-doubt write is reconciled instead)"
        )
        issues.append(_issue(file, located, (*at, "retry"), message))
    if action.needs_write and can_write is False:
        message = (
            f"{key!r} writes, but the recipe's credentials are read-only (canWrite is false); "
            "ask the practice administrator for write access or remove the step"
        )
        issues.append(_issue(file, located, (*at, "use"), message))
    return action, issues


def validate_recipe(
    path: str | Path,
    *,
    registry: ModuleRegistry | None = None,
    can_write: bool | None = None,
    display: str | None = None,
) -> ValidRecipe:
    """Load a recipe and check everything that can be checked before it runs.

    Args:
        path: the recipe file.
        registry: the modules (default: the shipped ones).
        can_write: whether the recipe's credentials may write, when known (from
            ``GET /api/v1/auth/validate``); None skips that check.
        display: the file name to use in messages.

    Returns:
        The checked recipe with its step actions and trigger.

    Raises:
        ManifestError: with every issue, each naming file, line, column and field.
    """
    located, file = read_located(path, display)
    return check_recipe(located, file, registry=registry, can_write=can_write)


def check_recipe(
    located: Located,
    file: str,
    *,
    registry: ModuleRegistry | None = None,
    can_write: bool | None = None,
) -> ValidRecipe:
    """Check a recipe already read (as :func:`validate_recipe`; raises ``ManifestError``)."""
    modules = registry if registry is not None else default_registry()
    recipe = recipe_from(located, file)
    data = located.data
    issues: list[Issue] = []
    actions: dict[str, StepAction] = {}
    for index, raw in enumerate(data["steps"]):
        action, found = _use_issues(raw, ("steps", index), modules, file, located, can_write)
        issues += found
        if action is not None:
            actions[raw["id"]] = action
    trigger_key = data["trigger"]["use"]
    trigger = modules.triggers.get(trigger_key)
    if trigger is None:
        where = ("trigger", "use")
        issues += check_names(
            trigger_key, modules.triggers, what="trigger", at=where, file=file, located=located
        )
    notes: list[str] = []
    if trigger is not None:
        found, notes = _reference_issues(recipe, actions, trigger)
        issues += found
    issues.sort(key=lambda issue: (issue.line, issue.column, issue.path))
    if issues or trigger is None:
        raise ManifestError(issues)
    return ValidRecipe(
        recipe=recipe, actions=actions, trigger=trigger, source=file, notes=tuple(notes)
    )


def output_schema(action: StepAction) -> Mapping[str, Any] | None:
    """The output schema of an action or local step (None when it declares none)."""
    if isinstance(action, ActionModule):
        return action.output.schema
    return action.output_schema


#: ``item`` outside a ``for_each`` step is None: any field read from it is reported.
_NO_ITEM = Target("item is set only in a step with for_each", position({"type": "null"}))


def _reference_issues(
    recipe: Recipe, actions: Mapping[str, StepAction], trigger: TriggerModule
) -> tuple[list[Issue], list[str]]:
    """Check every template path against the output schemas; say once what is unchecked."""
    issues: list[Issue] = []
    notes: list[str] = []
    members: dict[str, Target] = {}
    uses = {step.id: step.use for step in recipe.steps}
    base = {
        "trigger": Target(
            f"in the output schema of trigger {trigger.key!r}", position(trigger.output_schema)
        ),
        "vars": Target("declared in vars", position(literal_schema(recipe.vars))),
        "steps": Target("", members=members),
    }
    issues += check_references([*iter_templates(recipe.trigger_with)], {"vars": base["vars"]})
    for step in recipe.steps:
        templates: list[CompiledTemplate] = [*iter_templates(step.with_)]
        if step.if_ is not None:
            templates.append(step.if_)
        item = _NO_ITEM
        if step.for_each is not None:
            issues += check_references([step.for_each], {**base, "item": _NO_ITEM})
            elements = items_position(step.for_each, base)
            item = Target("in the elements for_each yields", elements)
        issues += check_references(templates, {**base, "item": item})
        for earlier, target in members.items():
            if target.position is None and any(
                ref.name == "steps" and ref.segments[:1] == (earlier,) and len(ref.segments) > 1
                for template in templates
                for ref in references_of(template)
            ):
                note = (
                    f"step {earlier!r} ({uses[earlier]!r}) declares no output "
                    "schema: the paths read from its output are not checked"
                )
                if note not in notes:
                    notes.append(note)
        members[step.id] = _step_target(step.use, actions.get(step.id), step.for_each)
    return issues, notes


def _step_target(use: str, action: StepAction | None, for_each: object) -> Target:
    schema = output_schema(action) if action is not None else None
    found: Position = position(schema)
    if found is not None and for_each is not None:  # a for_each step reads as a list
        found = tuple(({"type": "array", "items": part}, root) for part, root in found)
    return Target(f"in the output schema of {use!r}", found)
