"""A run rendered again under another recipe version from its journal, nothing sent: writes
are compared with the requests the run journaled. Steps match by id, else by the first
unmatched journaled step with the same ``use`` (a write carries the marker of its match).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from practiceflow.engine import run_action
from practiceflow.engine.masking import (
    mask_input,
    mask_text,
    mask_values,
    output_pii,
    personal_values,
)
from practiceflow.errors import PracticeflowError
from practiceflow.manifest import ActionModule, RecipeStep, default_registry
from practiceflow.runner.local import LocalStep
from practiceflow.runner.step_executor import add_marker, marker_enabled, marker_for
from practiceflow.runner.validate import StepAction, ValidRecipe, build_context, iteration_id
from practiceflow.state import RunRecord, StateStore, StepRecord
from practiceflow.templating import render_tree
from practiceflow.versions.recorded import VersionUnavailable, load_version, rebuild

#: What a write came to under the new version, beside what the run sent.
Verdict = Literal["same", "differs", "new", "dropped", "skipped", "error", "read"]


@dataclass(frozen=True)
class ReplayedStep:
    """One step of a replay: the request the run journaled (``sent``) and the one the new
    version would send (``would_send``), both masked, and the verdict (docs/versions.md)."""

    step_id: str
    use: str
    writes: bool
    verdict: Verdict
    sent: Any = None
    would_send: Any = None
    matched: str | None = None
    note: str = ""

    @property
    def changed(self) -> bool:
        """Whether the new version would write otherwise than the run did."""
        return self.writes and self.verdict in ("differs", "new", "dropped", "error")


@dataclass(frozen=True)
class Replay:
    """A run replayed under a version: each step in the new version's order, then the
    writes it drops; ``problem`` says why it could not be replayed at all, or is None."""

    run_id: str
    recipe: str
    steps: list[ReplayedStep] = field(default_factory=list)
    problem: str | None = None

    @property
    def differs(self) -> bool:
        """Whether any write of the new version differs from what the run sent."""
        return self.problem is None and any(step.changed for step in self.steps)


def comparable(request: Any) -> Any:
    """A request as both the journal and a dry run describe it: method, URL (path and
    query, no base URL) and JSON body; the client's own headers play no part."""
    if not isinstance(request, Mapping):
        return request
    url = str(request.get("url") or request.get("path") or "")
    if "/api/" in url:
        url = url[url.index("/api/") :]
    params = request.get("params")
    if params and "?" not in url:
        url += "?" + urlencode(params, doseq=True)
    return {"method": request.get("method"), "url": url, "json": request.get("json")}


class _Journal:
    """The run's journaled steps, matched once each to a step of the new version."""

    def __init__(self, steps: Sequence[StepRecord]) -> None:
        self.steps = {step.step_id: step for step in steps}
        self.unmatched = [step.step_id for step in steps]

    @staticmethod
    def use_of(step: StepRecord) -> str | None:
        request = step.request
        return str(request["use"]) if isinstance(request, Mapping) and "use" in request else None

    def match(self, sid: str, use: str) -> StepRecord | None:
        found = self.steps.get(sid)
        if found is None or self.use_of(found) not in (use, None) or sid not in self.unmatched:
            found = next(
                (self.steps[s] for s in self.unmatched if self.use_of(self.steps[s]) == use),
                None,
            )
        if found is not None:
            self.unmatched.remove(found.step_id)
        return found


def replay(store: StateStore, run: RunRecord, recipe: ValidRecipe) -> Replay:
    """Render a run again under ``recipe`` (module docstring); nothing is sent."""
    origin = run.origin if isinstance(run.origin, Mapping) else None
    if origin is None:
        why = "its payloads were removed (runs purge), or it is not a recipe run"
        return Replay(run.run_id, run.recipe, problem=why)
    journal = _Journal(store.get_steps(run.run_id))
    outputs: dict[str, Any] = {}
    shown: list[ReplayedStep] = []
    trigger = origin.get("payload")
    for step in recipe.recipe.steps:
        action = recipe.actions[step.id]
        context = build_context(trigger, outputs, recipe.recipe.vars, run.created_at)
        if step.for_each is None:
            result, output = _one(recipe, run, journal, step, action, step.id, trigger, outputs)
            shown.append(result)
            outputs[step.id] = output
            continue
        try:
            items = step.for_each.render(context)
        except PracticeflowError as exc:
            shown.append(
                ReplayedStep(step.id, step.use, action.needs_write, "error", note=str(exc))
            )
            continue
        found: list[Any] = []
        for index, item in enumerate(items if isinstance(items, list) else []):
            sid = iteration_id(step.id, index)
            result, output = _one(recipe, run, journal, step, action, sid, trigger, outputs, item)
            shown.append(result)
            found.append(output)
        outputs[step.id] = found
    wrote = _writes_of(store, run, recipe)
    for sid in journal.unmatched:  # what the run wrote that the new version does not
        left = journal.steps[sid]
        if left.status in ("succeeded", "sent", "in_doubt") and wrote(left):
            use = journal.use_of(left) or "?"
            sent = comparable(_request_of(left))
            shown.append(ReplayedStep(sid, use, True, "dropped", sent=sent, matched=sid))
    return Replay(run.run_id, run.recipe, shown)


def _writes_of(store: StateStore, run: RunRecord, recipe: ValidRecipe) -> Any:
    """Tells whether a journaled step of the run was a write: by the run's own version
    when it can be rebuilt, else by the action its journal names."""
    actions: dict[str, bool] = {}
    if run.version is not None:
        try:
            old = rebuild(load_version(store, run.version))
            actions = {sid: action.needs_write for sid, action in old.actions.items()}
        except VersionUnavailable:
            pass
    by_use = {step.use: recipe.actions[step.id].needs_write for step in recipe.recipe.steps}

    def wrote(step: StepRecord) -> bool:
        base = step.step_id.split("[", 1)[0]
        if base in actions:
            return actions[base]
        use = _Journal.use_of(step)
        if use in by_use:
            return by_use[use]
        known = default_registry().actions.get(use or "")
        return known is not None and known.needs_write

    return wrote


def _request_of(step: StepRecord | None) -> Any:
    request = step.request if step is not None else None
    return request.get("request") if isinstance(request, Mapping) else None


def _one(
    recipe: ValidRecipe,
    run: RunRecord,
    journal: _Journal,
    step: RecipeStep,
    action: StepAction,
    sid: str,
    trigger: Any,
    outputs: dict[str, Any],
    item: Any = None,
) -> tuple[ReplayedStep, Any]:
    """One step (one iteration): its verdict and the output later steps read."""
    writes = action.needs_write
    personal = _personal(recipe, trigger, outputs)
    matched = journal.match(sid, step.use)
    sent = comparable(_request_of(matched)) if matched is not None else None
    recorded = matched.output if matched is not None and matched.status == "succeeded" else None
    name = matched.step_id if matched is not None else None
    context = build_context(trigger, outputs, recipe.recipe.vars, run.created_at, item)
    try:
        if step.if_ is not None and not step.if_.render(context):
            verdict: Verdict = "dropped" if writes and sent is not None else "skipped"
            note = f"if {step.if_.source} is false"
            return ReplayedStep(sid, step.use, writes, verdict, sent, None, name, note), None
        data = render_tree(step.with_, context)
    except PracticeflowError as exc:
        note = mask_text(f"cannot be rendered from the journal: {exc}", personal)
        return ReplayedStep(sid, step.use, writes, "error", sent, None, name, note), recorded
    if not writes:
        note = "" if matched is not None else "no recorded output: the run never made this read"
        return ReplayedStep(sid, step.use, False, "read", None, None, name, note), recorded
    if isinstance(action, ActionModule) and marker_enabled(recipe.recipe.raw, step.id):
        data = add_marker(action, data, marker_for(run.run_id, name or sid))
    if isinstance(action, LocalStep):
        would: Any = mask_input(data, action.pii_paths)
    else:
        try:
            would = comparable(run_action(action, data, None, dry_run=True).request)
        except PracticeflowError as exc:
            note = mask_text(str(exc), personal)
            return ReplayedStep(sid, step.use, True, "error", sent, None, name, note), recorded
    # Masked as the run journaled what it sent: a personal value the run had read stays
    # masked wherever a template copied it.
    would = mask_values(would, personal)
    verdict = "new" if sent is None else "same" if would == sent else "differs"
    return ReplayedStep(sid, step.use, True, verdict, sent, would, name), recorded


def _personal(recipe: ValidRecipe, trigger: Any, outputs: Mapping[str, Any]) -> frozenset[str]:
    """Every personal value a run had read before a step: its event's and the outputs'
    of the steps before (each by its module's output schema)."""
    values = set(personal_values(trigger, output_pii(trigger, recipe.trigger.output_schema)))
    for sid, output in outputs.items():
        schema = getattr(getattr(recipe.actions.get(sid), "output", None), "schema", None)
        if isinstance(schema, Mapping):
            values.update(personal_values(output, output_pii(output, schema)))
    return frozenset(values)
