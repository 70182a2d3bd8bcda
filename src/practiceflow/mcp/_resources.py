"""What an assistant reads to answer "what is stuck, and why": resources and their templates
(listed in ``docs/mcp.md``). Nothing here holds a personal value the journal would not show:
step requests and errors are journaled masked, a step's output is masked by its schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

import mcp_types as types

from practiceflow.budget.rate_budget import RateLimits
from practiceflow.engine.masking import mask_output, mask_secrets
from practiceflow.errors import ConfigError
from practiceflow.manifest import ActionModule
from practiceflow.mcp._desk import WriteDesk
from practiceflow.service.needs_person import label, needs_person, open_entries, settle_command
from practiceflow.state import RunRecord, StepRecord

#: The assistant's share of the practice's budget (60/min, 1000/h, 10000/day): a third of
#: each window at most, so that the practice's recipes keep the rest whatever an assistant
#: asks for.
ASSISTANT_LIMITS = RateLimits(per_minute=20, per_hour=330, per_day=3300, max_wait=60.0)

#: The resource listing the practice's recent runs.
RECENT_RUNS_URI: Final = "practiceflow://runs/recent"
#: The resource listing the runs waiting for a person.
HELD_RUNS_URI: Final = "practiceflow://runs/held"
#: The resource giving the requests sent in each window of the budget.
BUDGET_URI: Final = "practiceflow://budget"
_LIST_PREFIX: Final = "practiceflow://lists/"
_RUN_PREFIX: Final = "practiceflow://runs/"
_WINDOWS: Final = {
    "minute": timedelta(minutes=1),
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
}
_JSON: Final = "application/json"

TEMPLATES: Final = (
    types.ResourceTemplate(
        uri_template="practiceflow://runs/{run_id}",
        name="run",
        title="A run and its steps",
        description="One run (a recipe's, or an assistant's write): status, each step's "
        "status, journaled request (masked) and output or error, and why it is held.",
        mime_type=_JSON,
    ),
    types.ResourceTemplate(
        uri_template="practiceflow://runs/{run_id}/held",
        name="held_steps",
        title="The steps of a run held for a person",
        description="The steps of a run waiting for a person (a write whose outcome is "
        "unknown, a gap), each with why and how to settle it ('practiceflow runs resolve').",
        mime_type=_JSON,
    ),
    types.ResourceTemplate(
        uri_template="practiceflow://budget/{window}",
        name="budget_window",
        title="Requests sent in one window of the rate budget",
        description="window: minute, hour or day. Requests the practice sent in it "
        "(recipes and assistant), its limit, and the assistant's share.",
        mime_type=_JSON,
    ),
    types.ResourceTemplate(
        uri_template="practiceflow://lists/{action}",
        name="lookup_list",
        title="A lookup list",
        description="The rows of a list action that needs no input (entity types, lead "
        "sources, users...), to look up an id before filling a form.",
        mime_type=_JSON,
    ),
)


#: The static resources: uri, name, title, description.
_STATIC: Final = (
    (
        RECENT_RUNS_URI,
        "recent_runs",
        "Recent runs",
        "The practice's latest runs (recipes and assistant writes), newest first: run id, "
        "recipe, status, steps. Details: practiceflow://runs/{id}.",
    ),
    (
        HELD_RUNS_URI,
        "held_runs",
        "Runs waiting for a person",
        "What is stuck and why: the runs held for a person, each with its held steps, the "
        "reason and how to settle it.",
    ),
    (
        BUDGET_URI,
        "budget",
        "Rate budget",
        "Requests the practice sent in the last minute, hour and day, against its limits and "
        "the assistant's share of them.",
    ),
)


@dataclass
class Resources:
    """The resources of one server (see the module docstring); synchronous, called from a
    worker thread.
    """

    desk: WriteDesk
    lists: Mapping[str, ActionModule]
    recent: int = 20
    limits: RateLimits = field(default_factory=RateLimits)

    def listed(self) -> list[types.Resource]:
        """The static resources."""
        resources = [
            types.Resource(
                uri=_LIST_PREFIX + key,
                name=key,
                title=module.title,
                description=module.description.strip(),
                mime_type=_JSON,
            )
            for key, module in self.lists.items()
        ]
        resources += [
            types.Resource(uri=uri, name=name, title=title, description=text, mime_type=_JSON)
            for uri, name, title, text in _STATIC
        ]
        return resources

    def read(self, uri: str) -> Any:
        """The payload of a resource; ConfigError for no such resource (listing those that
        exist)."""
        if uri == RECENT_RUNS_URI:
            return [self._summary(run) for run in self._runs()]
        if uri == HELD_RUNS_URI:
            store = self.desk.store
            held = [run for run in self._runs(status="in_doubt") if needs_person(store, run)]
            entries = [
                {
                    "attention_id": entry.attention_id,
                    "kind": label(entry),
                    "trigger": entry.trigger,
                    "why": entry.reason,
                    "settle": settle_command(entry),
                }
                for entry in open_entries(store, self.desk.practice)
            ]
            return [{**self._summary(run), "held": self._held(run)} for run in held] + entries
        if uri == BUDGET_URI:
            return {window: self._window(window) for window in _WINDOWS}
        if uri.startswith(BUDGET_URI + "/") and uri.removeprefix(BUDGET_URI + "/") in _WINDOWS:
            return self._window(uri.removeprefix(BUDGET_URI + "/"))
        if uri.startswith(_LIST_PREFIX) and uri.removeprefix(_LIST_PREFIX) in self.lists:
            return self.desk.read(self.lists[uri.removeprefix(_LIST_PREFIX)], {})
        if uri.startswith(_RUN_PREFIX):
            run_id, _, rest = uri.removeprefix(_RUN_PREFIX).partition("/")
            run = self._run(run_id)
            if run is not None and rest == "held":
                return self._held(run)
            if run is not None and not rest:
                return {**self._summary(run), "error": run.error, "steps": self._steps(run)}
        known = [uri for uri, *_ in _STATIC]
        known += [template.uri_template for template in TEMPLATES]
        message = f"unknown resource {uri!r}; valid values are {known}"
        raise ConfigError(message)

    def _runs(self, status: Any = None) -> list[RunRecord]:
        return self.desk.store.list_runs(
            practice=self.desk.practice, status=status, limit=self.recent
        )

    def _run(self, run_id: str) -> RunRecord | None:
        run = self.desk.store.get_run(run_id) if run_id else None
        return run if run is not None and run.practice == self.desk.practice else None

    def _summary(self, run: RunRecord) -> dict[str, Any]:
        steps = {step.step_id: step.status for step in self._journaled(run)}
        return {
            "run_id": run.run_id,
            "recipe": run.recipe,
            "status": run.status,
            "steps": steps,
            "updated_at": run.updated_at.isoformat(),
        }

    def _journaled(self, run: RunRecord) -> list[StepRecord]:
        return [s for s in self.desk.store.get_steps(run.run_id) if not s.step_id.startswith("@")]

    def _steps(self, run: RunRecord) -> list[dict[str, Any]]:
        return [
            {
                "step": step.step_id,
                "status": step.status,
                "request": step.request,
                "output": self._output(step),
                "error": step.error,
                "resolved_by": step.resolved_by,
                "note": step.resolution_note,
            }
            for step in self._journaled(run)
        ]

    def _output(self, step: StepRecord) -> Any:
        module = self.desk.registry.actions.get(step.step_id.split("[")[0])
        if module is None or step.output is None:
            return None
        return mask_output(mask_secrets(step.output, module.secret_paths), module.output.schema)

    def _held(self, run: RunRecord) -> list[dict[str, Any]]:
        short = run.run_id[:8]
        if run.status != "in_doubt":
            return []
        held: list[dict[str, Any]] = []
        for step in self._journaled(run):
            if step.status != "in_doubt":
                continue
            error = step.error if isinstance(step.error, Mapping) else {}
            why = error.get("reason") or error.get("message") or "its outcome is unknown"
            held.append(
                {
                    "step": step.step_id,
                    "why": str(why),
                    "settle": "a person checks the practice's records, then runs "
                    f"'practiceflow runs resolve {short} --step {step.step_id} --as done' (it "
                    f"happened) or '--as retry' (it did not); see 'practiceflow runs show "
                    f"{short}'",
                }
            )
        if not held and isinstance(run.error, Mapping):
            held.append({"step": None, "why": str(run.error.get("reason") or run.error)})
        return held

    def _window(self, window: str) -> dict[str, Any]:
        since = self.desk.store.now() - _WINDOWS[window]
        used = self.desk.store.request_counts(self.desk.practice, since)
        limit = int(getattr(self.limits, f"per_{window}"))
        share = int(getattr(ASSISTANT_LIMITS, f"per_{window}"))
        return {
            "window": window,
            "sent": used,
            "limit": limit,
            "left": max(limit - used, 0),
            "assistant_share": share,
            "assistant_may_send": max(share - used, 0),
        }
