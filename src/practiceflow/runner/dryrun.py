"""``--dry-run``: render every step of a recipe and send nothing.

The trigger's ``sample`` stands in for the event, and each step after the first reads the
``sample`` outputs of the steps before it, so that every template is rendered exactly as a
real run would render it. Requests are described as the client would send them, with
secrets and personal (``x-pii``) values masked. Checks that read the API are not run (the
engine says so in the step's warnings). Nothing is journaled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from practiceflow.engine import run_action
from practiceflow.engine.masking import mask_input, mask_request
from practiceflow.errors import PracticeflowError
from practiceflow.hooks import ClientLike
from practiceflow.runner.context import build_context, iteration_id
from practiceflow.runner.local import LocalStep
from practiceflow.runner.validate import ValidRecipe
from practiceflow.templating import render_tree, utcnow

__all__ = ["DryStep", "dry_run"]

#: Iterations of a ``for_each`` shown at most.
MAX_SHOWN_ITEMS = 3


@dataclass(frozen=True)
class DryStep:
    """One step as a dry run rendered it.

    Attributes:
        step_id: the journal id it would have (``id[n]`` inside a ``for_each``).
        use: the action or local step.
        status: ``would_send``, ``would_skip`` or ``error``.
        request: the described request (masked), or the masked input of a local step.
        note: why it would be skipped, or what went wrong.
        warnings: what the engine wants the user to know (checks not run...).
    """

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
) -> list[DryStep]:
    """Render every step with sample outputs; send nothing.

    Args:
        recipe: the checked recipe.
        trigger: the event payload (default: the trigger module's sample).
        client: used only to describe the exact URL (base URL, auth headers masked).
        now: the run's time (default: now, UTC).

    Returns:
        One :class:`DryStep` per step and shown iteration.
    """
    payload = recipe.trigger.sample if trigger is None else trigger
    moment = now or utcnow()
    variables = recipe.recipe.vars
    outputs: dict[str, Any] = {}
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
                outputs[step.id] = [dict(action.sample)]
                continue
            values = rendered if isinstance(rendered, list) else []
            items = [(iteration_id(step.id, n), v) for n, v in enumerate(values)]
            items = items[:MAX_SHOWN_ITEMS]
            if not items:
                shown.append(DryStep(step.id, step.use, "would_skip", note="for_each: no items"))
        for sid, item in items:
            shown.append(
                _render_one(recipe, step, action, sid, payload, outputs, moment, item, client)
            )
        sample = dict(action.sample)
        outputs[step.id] = [sample for _ in items] if step.for_each is not None else sample
    return shown


def _render_one(
    recipe: ValidRecipe,
    step: Any,
    action: Any,
    sid: str,
    payload: Any,
    outputs: dict[str, Any],
    now: datetime,
    item: Any,
    client: ClientLike | None,
) -> DryStep:
    context = build_context(payload, outputs, recipe.recipe.vars, now, item)
    try:
        if step.if_ is not None and not step.if_.render(context):
            return DryStep(sid, step.use, "would_skip", note=f"if {step.if_.source} is false")
        data = render_tree(step.with_, context)
    except PracticeflowError as exc:
        return DryStep(sid, step.use, "error", note=str(exc))
    if isinstance(action, LocalStep):
        return DryStep(sid, step.use, "would_send", mask_input(data, action.pii_paths))
    try:
        result = run_action(action, data, client, dry_run=True)
    except PracticeflowError as exc:
        return DryStep(sid, step.use, "error", note=str(exc))
    request = mask_request(result.request, data, action.pii_paths)
    return DryStep(sid, step.use, "would_send", request, warnings=list(result.warnings))
