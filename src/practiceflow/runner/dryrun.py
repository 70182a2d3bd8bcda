"""``--dry-run``: render every step of a recipe with the trigger's and steps' sample outputs
(a declared field a sample lacks reads as a placeholder of its type) and send nothing.
Requests are masked unless ``show_personal``; checks that read the API are not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from practiceflow.engine import run_action
from practiceflow.engine.masking import mask_input, mask_request
from practiceflow.errors import PracticeflowError
from practiceflow.hooks import ClientLike
from practiceflow.manifest import RecipeStep
from practiceflow.runner.local import LocalStep
from practiceflow.runner.validate import (
    StepAction,
    ValidRecipe,
    build_context,
    iteration_id,
    output_schema,
)
from practiceflow.templating import render_tree, utcnow

#: Iterations of a ``for_each`` shown at most.
MAX_SHOWN_ITEMS = 3


@dataclass(frozen=True)
class DryStep:
    """One step as a dry run rendered it: ``status`` is ``would_send``, ``would_skip`` or
    ``error``; ``request`` is masked (a local step's masked input)."""

    step_id: str
    use: str
    status: str
    request: Any = None
    note: str = ""
    warnings: list[str] = field(default_factory=list)


def dry_run(
    recipe: ValidRecipe,
    *,
    trigger: Any = None,
    client: ClientLike | None = None,
    now: datetime | None = None,
    show_personal: bool = False,
) -> list[DryStep]:
    """Render every step with sample outputs (``trigger``: the event, default the sample); send
    nothing. ``show_personal`` leaves personal values unmasked for the person whose data it is,
    never for a journal, a log or an AI model; secrets stay masked. ``client`` only shapes URLs.
    """
    if trigger is None:
        payload = with_declared(recipe.trigger.sample, recipe.trigger.output_schema)
    else:
        payload = trigger
    moment = now or utcnow()
    variables = recipe.recipe.vars
    outputs: dict[str, Any] = {}

    def render(step: RecipeStep, action: StepAction, sid: str, item: Any) -> DryStep:
        context = build_context(payload, outputs, variables, moment, item)
        try:
            if step.if_ is not None and not step.if_.render(context):
                return DryStep(sid, step.use, "would_skip", note=f"if {step.if_.source} is false")
            data = render_tree(step.with_, context)
        except PracticeflowError as exc:
            return DryStep(sid, step.use, "error", note=str(exc))
        if isinstance(action, LocalStep):
            shown = data if show_personal else mask_input(data, action.pii_paths)
            return DryStep(sid, step.use, "would_send", shown)
        try:
            result = run_action(action, data, client, dry_run=True, show_personal=show_personal)
        except PracticeflowError as exc:
            return DryStep(sid, step.use, "error", note=str(exc))
        request = result.request
        if not show_personal:
            request = mask_request(request, data, action.pii_paths)
        return DryStep(sid, step.use, "would_send", request, warnings=list(result.warnings))

    shown: list[DryStep] = []
    for step in recipe.recipe.steps:
        action = recipe.actions[step.id]
        context = build_context(payload, outputs, variables, moment)
        items: list[tuple[str, Any]] = [(step.id, None)]
        if step.for_each is not None:
            try:
                rendered = step.for_each.render(context)
            except PracticeflowError as exc:
                shown.append(DryStep(step.id, step.use, "error", note=str(exc)))
                outputs[step.id] = [_sample(action)]
                continue
            values = rendered if isinstance(rendered, list) else []
            items = [(iteration_id(step.id, n), v) for n, v in enumerate(values)]
            items = items[:MAX_SHOWN_ITEMS]
            if not items:
                shown.append(DryStep(step.id, step.use, "would_skip", note="for_each: no items"))
        shown.extend(render(step, action, sid, item) for sid, item in items)
        sample = _sample(action)
        outputs[step.id] = [sample for _ in items] if step.for_each is not None else sample
    return shown


def _sample(action: Any) -> dict[str, Any]:
    return with_declared(action.sample, output_schema(action))


#: Placeholders by ``format``, then by ``type``, for declared fields a sample lacks.
_BY_FORMAT = {
    "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "2000-01-01",
    "date-time": "2000-01-01T00:00:00Z",
    "email": "someone@example.com",
}
_BY_TYPE: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def with_declared(sample: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of ``sample`` with a placeholder for each top-level field ``schema`` declares."""
    filled = dict(sample)
    properties = schema.get("properties") if schema is not None else None
    if not isinstance(properties, Mapping):
        return filled
    for name, declared in properties.items():
        if name not in filled and isinstance(declared, Mapping):
            filled[name] = _placeholder(declared)
    return filled


def _placeholder(schema: Mapping[str, Any]) -> Any:
    for keyword in ("examples", "enum"):
        values = schema.get(keyword)
        if isinstance(values, list) and values:
            return values[0]
    if "const" in schema:
        return schema["const"]
    if schema.get("format") in _BY_FORMAT:
        return _BY_FORMAT[str(schema["format"])]
    declared = schema.get("type")
    kinds = [declared] if isinstance(declared, str) else list(declared or [])
    for kind in kinds:
        if kind in _BY_TYPE:
            value = _BY_TYPE[kind]
            return type(value)() if isinstance(value, list | dict) else value
    return None
