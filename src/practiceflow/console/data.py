"""The console's data: JSON-ready views built from the state store, behind every page and
``/console/api/`` route (so both agree), each passed through the :class:`Redactor` once. A
figure the store does not keep is ``None`` here and "not recorded" on a page, never guessed.
"""

from __future__ import annotations

import getpass
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from practiceflow.api import RateLimits
from practiceflow.console.redact import Redactor
from practiceflow.engine.masking import mask_values
from practiceflow.errors import PracticeflowError
from practiceflow.manifest import ActionModule, ModuleRegistry, default_registry
from practiceflow.runner import ValidRecipe
from practiceflow.runner.plan import plan
from practiceflow.runner.quarantine import quarantine_reason
from practiceflow.runner.report import brief, detail
from practiceflow.service.needs_person import label, settle_command
from practiceflow.state import RUN_STATUSES, RunRecord, RunStatus, StateStore, StepRecord
from practiceflow.state.runids import find_run
from practiceflow.versions import VersionUnavailable, load_version, rebuild, short


@dataclass
class ConsoleContext:
    """Everything the console reads, and the live parts of ``serve`` when it runs there.

    Attributes:
        store: the state store.
        practice: the practice whose runs and budget are shown (None: every practice's
            runs; the budget then shows nothing).
        recipes: the recipes ``serve`` runs (empty when the console runs on its own).
        registry: modules whose ``x-pii`` tags are masked (shipped ones by default).
        limits: the three windows of the rate budget.
        secrets: secret values to hide wherever they appear (the client secret).
        intake: the triggers' side of ``serve`` (receiver, triggers), when live.
        stop: ``serve``'s stop flag, when live.
        settled: set after a person resolves a step, so ``serve`` resumes settled runs.
        wake: set with ``settled``, so that ``serve`` does so at once.
        who: the default name recorded with a resolution (the OS user, as the CLI does).
        webhook_url: whether a public webhook URL is configured (for the forecast).
    """

    store: StateStore
    practice: str | None = None
    recipes: Sequence[ValidRecipe] = ()
    registry: ModuleRegistry | None = None
    limits: RateLimits = field(default_factory=RateLimits)
    secrets: Sequence[str] = ()
    intake: Any = None
    stop: threading.Event | None = None
    settled: threading.Event | None = None
    wake: threading.Event | None = None
    who: str = field(default_factory=getpass.getuser)
    webhook_url: bool = False
    redactor: Redactor = field(init=False)

    def __post_init__(self) -> None:
        base = self.registry or default_registry()
        # A copy: the shipped registry is shared by the whole process.
        registry = ModuleRegistry(dict(base.actions), dict(base.triggers))
        for recipe in self.recipes:
            for action in recipe.actions.values():
                if isinstance(action, ActionModule):
                    registry.actions.setdefault(action.key, action)
            registry.triggers.setdefault(recipe.trigger.key, recipe.trigger)
        self.registry = registry
        self.redactor = Redactor(registry, self.secrets)

    def refresh_secrets(self) -> None:
        """Learn the webhook secrets of subscriptions made since the last page."""
        self.redactor.add_secrets(sub.secret for sub in self.store.list_subscriptions())


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="seconds")


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds(), 3)


def _live(ctx: ConsoleContext) -> bool:
    return ctx.stop is not None and not ctx.stop.is_set()


def _effective_mode(ctx: ConsoleContext, trigger_key: str) -> str | None:
    triggers = getattr(ctx.intake, "triggers", None)
    if isinstance(triggers, dict) and trigger_key in triggers:
        return str(getattr(triggers[trigger_key], "mode", None) or "") or None
    return None


def _last_delivery(ctx: ConsoleContext, trigger_key: str, stored: datetime | None) -> str | None:
    """The newest webhook event stored, or the live receiver's last (duplicate) delivery."""
    server = getattr(ctx.intake, "server", None)
    receiver = getattr(server, "receiver", None)
    stamp = None
    if receiver is not None and ctx.practice is not None:
        stamp = receiver.last_delivery(ctx.practice, trigger_key)
    live = None if stamp is None else datetime.fromtimestamp(stamp, UTC)
    return _iso(max((t for t in (stored, live) if t is not None), default=None))


def _next_poll(ctx: ConsoleContext, trigger_key: str) -> str | None:
    """When the live intake polls this trigger next (``None`` outside ``serve``)."""
    next_poll = getattr(ctx.intake, "next_poll", None)
    if not _live(ctx) or not callable(next_poll):
        return None
    when = next_poll(trigger_key)
    return _iso(when) if isinstance(when, datetime) else None


def _recipe_row(ctx: ConsoleContext, name: str, recipe: ValidRecipe | None) -> dict[str, Any]:
    store = ctx.store
    latest = store.list_runs(practice=ctx.practice, recipe=name, limit=1)
    trigger_key = recipe.trigger.key if recipe else None
    last_event: dict[str, Any] | None = None
    if latest:
        run = latest[0]
        received = None
        if trigger_key and ctx.practice:
            event = store.get_event(ctx.practice, trigger_key, run.event_id)
            received = _iso(event.received_at) if event else None
        last_event = {
            "event_id": run.event_id,
            "run_id": run.run_id,
            "received_at": received or _iso(run.created_at),
        }
    subscription = None
    cursor = None
    if trigger_key and ctx.practice:
        record = store.get_subscription(ctx.practice, trigger_key)
        if record is not None:
            health = store.subscription_health(ctx.practice, trigger_key)
            subscription = {
                "status": record.status,
                "event": record.event,
                "subscribed_at": _iso(record.created_at),
                "updated_at": _iso(record.updated_at),
                "last_delivery": _last_delivery(ctx, trigger_key, health.last_delivery_at),
                "last_test_delivery": _iso(health.last_test_delivery_at),
                "resubscribes": health.resubscribes,
            }
        state = store.get_cursor_state(ctx.practice, trigger_key)
        if state is not None:
            cursor = {"value": state.value, "moved_at": _iso(state.updated_at)}
    status = "not served here" if recipe is None else ("live" if _live(ctx) else "stopped")
    return {
        "name": name,
        "status": status,
        "file": recipe.source if recipe else None,
        "trigger": trigger_key,
        "mode": recipe.recipe.mode if recipe else None,
        "receiving_by": _effective_mode(ctx, trigger_key) if trigger_key else None,
        "last_event": last_event,
        "next_poll": _next_poll(ctx, trigger_key) if trigger_key else None,
        "cursor": cursor,
        "subscription": subscription,
    }


def recipes_view(ctx: ConsoleContext) -> list[dict[str, Any]]:
    """The recipes ``serve`` runs, then any other recipe that has runs in the store."""
    rows = [_recipe_row(ctx, recipe.name, recipe) for recipe in ctx.recipes]
    known = {recipe.name for recipe in ctx.recipes}
    others = sorted(
        {run.recipe for run in ctx.store.list_runs(practice=ctx.practice, limit=500)} - known
    )
    rows += [_recipe_row(ctx, name, None) for name in others]
    return [ctx.redactor.secrets(row) for row in rows]


def parse_filters(
    query: Mapping[str, str],
) -> tuple[str | None, RunStatus | None, date | None, list[str]]:
    """Check the run list's filters (``recipe``, ``status``, ``date`` of a query); a bad one
    is reported and ignored, not fatal."""
    recipe, status, day = query.get("recipe"), query.get("status"), query.get("date")
    problems: list[str] = []
    found_status: RunStatus | None = None
    if status:
        if status in RUN_STATUSES:
            found_status = status
        else:
            problems.append(f"status: got {status!r}; valid values are {list(RUN_STATUSES)}")
    found_day = None
    if day:
        try:
            found_day = date.fromisoformat(day)
        except ValueError:
            problems.append(f"date: got {day!r}; expected YYYY-MM-DD")
    return recipe or None, found_status, found_day, problems


def _run_row(ctx: ConsoleContext, run: RunRecord) -> dict[str, Any]:
    steps = ctx.store.get_steps(run.run_id)
    done = sum(step.status in ("succeeded", "skipped") for step in steps)
    return {
        "run_id": run.run_id,
        "recipe": run.recipe,
        "event_id": run.event_id,
        "status": run.status,
        "steps_done": f"{done}/{len(steps)}",
        "version": short(run.version),
        "created_at": _iso(run.created_at),
        "updated_at": _iso(run.updated_at),
    }


def runs_view(
    ctx: ConsoleContext,
    *,
    recipe: str | None = None,
    status: RunStatus | None = None,
    day: date | None = None,
) -> list[dict[str, Any]]:
    """Runs matching the filters, newest first (as ``practiceflow runs list``)."""
    since = datetime.combine(day, time(), UTC) if day else None
    found = ctx.store.list_runs(
        practice=ctx.practice, recipe=recipe, status=status, since=since, limit=200
    )
    if day is not None:
        found = [run for run in found if run.created_at.astimezone(UTC).date() == day]
    return [ctx.redactor.secrets(_run_row(ctx, run)) for run in found]


def _use_of(step: StepRecord, recipe: ValidRecipe | None) -> str | None:
    if isinstance(step.request, dict) and isinstance(step.request.get("use"), str):
        return str(step.request["use"])
    if recipe is not None:
        base = step.step_id.split("[", 1)[0]
        for candidate in recipe.recipe.steps:
            if candidate.id == base:
                return candidate.use
    return None


def _step_view(ctx: ConsoleContext, step: StepRecord, recipe: ValidRecipe | None) -> dict[str, Any]:
    red = ctx.redactor
    use = _use_of(step, recipe)
    error = red.error(use, step.error, step.request)
    note = red.error(use, step.resolution_note, step.request)
    shown = replace(step, error=error, output=None, resolution_note=note)
    output = red.output(use, step.output)
    history = [
        {
            "from": move.from_status,
            "to": move.to_status,
            "at": _iso(move.at),
            "at_precise": move.at.isoformat(),
            "who": move.who,
            "note": red.error(use, move.note, step.request),
            "detail": red.error(use, move.detail, step.request),
        }
        for move in ctx.store.step_history(step.run_id, step.step_id)
    ]
    return {
        "step": step.step_id,
        "use": use,
        "status": step.status,
        "attempts": step.attempts,
        "detail": red.text(detail(shown) if step.status != "succeeded" else brief(output)),
        "request": red.request(step.request),
        "output": output,
        "error": error,
        "created_at": _iso(step.created_at),
        "sent_at": _iso(step.sent_at),
        "updated_at": _iso(step.updated_at),
        "duration_s": _answer_time(history),
        "resolved_by": step.resolved_by,
        "resolved_at": _iso(step.resolved_at),
        "resolution_note": note,
        "resolvable": step.status in ("in_doubt", "failed"),
        "history": history,
    }


def _answer_time(history: Sequence[dict[str, Any]]) -> float | None:
    """Seconds from the last send to the move that followed it (the answer, or in doubt)."""
    for index in range(len(history) - 1, -1, -1):
        if history[index]["to"] == "sent" and index + 1 < len(history):
            start = datetime.fromisoformat(history[index]["at_precise"])
            return _seconds(start, datetime.fromisoformat(history[index + 1]["at_precise"]))
    return None


def _recipe_of(ctx: ConsoleContext, run: RunRecord) -> ValidRecipe | None:
    """The recipe a run runs on: its stored version, else the served one of its name."""
    if run.version is not None:
        try:
            return rebuild(load_version(ctx.store, run.version))
        except VersionUnavailable:
            pass
    return next((recipe for recipe in ctx.recipes if recipe.name == run.recipe), None)


def run_view(ctx: ConsoleContext, run_id: str) -> dict[str, Any] | None:
    """One run with its event and every step's journal, masked.

    Raises:
        AmbiguousRunId: a short id that starts several runs' ids.
    """
    run = find_run(ctx.store, run_id)  # a short id is taken too (AmbiguousRunId lists)
    if run is None or (ctx.practice is not None and run.practice != ctx.practice):
        return None
    run_id = run.run_id
    recipe = _recipe_of(ctx, run)
    steps = ctx.store.get_steps(run_id)
    held = [step.step_id for step in steps if step.status == "in_doubt"]
    advice = quarantine_reason(run)
    if advice is None and run.status == "in_doubt":
        advice = (
            "held for a person: check the practice's records, then "
            f"'practiceflow runs resolve {run_id} --step {held[0] if held else 'ID'} "
            "--as done|retry'"
        )
    red = ctx.redactor
    values = red.event_personal(run.origin) | _personal(ctx, steps, recipe)
    data = _run_row(ctx, run)
    data.update(
        error=ctx.redactor.secrets(run.error),
        event=ctx.redactor.event(run.origin) if run.origin is not None else None,
        steps=[_step_view(ctx, step, recipe) for step in steps],
        advice=advice,
        duration_s=_seconds(run.created_at, run.updated_at),
    )
    # A value personal in one step is personal in every step (a name copied into a note).
    return mask_values(data, values)  # type: ignore[no-any-return]


def _personal(
    ctx: ConsoleContext, steps: Sequence[StepRecord], recipe: ValidRecipe | None
) -> frozenset[str]:
    """The personal values of the steps' inputs and outputs (masked wherever they appear)."""
    red = ctx.redactor
    return frozenset().union(
        *(red.personal(_use_of(step, recipe), step.request) for step in steps),
        *(red.output_personal(_use_of(step, recipe), step.output) for step in steps),
    )


def _attention_row(
    run_id: str, recipe: str, event_id: str, since: str | None, why: str, **rest: Any
) -> dict[str, Any]:
    """One row of the attention view (``rest`` overrides the fields of a step in doubt)."""
    return {
        "run_id": run_id,
        "recipe": recipe,
        "event_id": event_id,
        "step": None,
        "use": None,
        "since": since,
        "why_in_doubt": why,
        "reconciliation": None,
        "request": None,
        "quarantined": False,
        "held": False,
    } | rest


def attention_view(ctx: ConsoleContext) -> list[dict[str, Any]]:
    """What waits for a person: steps in doubt, with what the read-back looked at,
    quarantined runs, and the open entries of the attention table, with their reason.
    """
    red = ctx.redactor
    rows: list[dict[str, Any]] = []
    for run in ctx.store.list_runs(practice=ctx.practice, status="in_doubt", limit=500):
        head = (run.run_id, run.recipe, run.event_id)
        reason = quarantine_reason(run)
        if reason is not None:  # nothing to settle: the reason says what to do
            row = _attention_row(*head, _iso(run.updated_at), red.text(reason), quarantined=True)
            rows.append(mask_values(row, red.event_personal(run.origin)))
            continue
        recipe = _recipe_of(ctx, run)
        steps = ctx.store.get_steps(run.run_id)
        values = _personal(ctx, steps, recipe)
        looked = run.error.get("reason") if isinstance(run.error, dict) else None
        for step in steps:
            if step.status != "in_doubt":
                continue
            view = _step_view(ctx, step, recipe)
            row = _attention_row(
                *head,
                view["updated_at"],
                view["detail"],
                step=step.step_id,
                use=view["use"],
                reconciliation=red.error(view["use"], looked, step.request),
                request=view["request"],
            )
            rows.append(mask_values(row, values))
    for entry in ctx.store.list_attention(practice=ctx.practice, statuses=("open",)):
        rows.append(
            _attention_row(
                entry.attention_id,
                label(entry),
                entry.dedupe,
                _iso(entry.created_at),
                red.text(entry.reason),
                held=entry.kind == "unrecognised",
                entry=True,
                kind=entry.kind,
                settle=settle_command(entry),
            )
        )
    return rows


#: What the forecast shows of each recipe's cost (fields of :class:`RecipeCost`).
_COST_FIELDS = ("name", "per_run", "events_per_day", "poll_per_hour", "per_day")


def _buckets(
    store: StateStore, practice: str, end: datetime, width: timedelta, count: int
) -> list[dict[str, Any]]:
    edges = [end - width * index for index in range(count, -1, -1)]
    totals = [store.request_counts(practice, edge) for edge in edges]
    return [
        {"start": _iso(edges[index]), "requests": totals[index] - totals[index + 1]}
        for index in range(count)
    ]


def budget_view(ctx: ConsoleContext) -> dict[str, Any]:
    """Requests per minute (last hour) and per hour (last day) against the three limits,
    from the store's request bookkeeping, with the ``practiceflow plan`` forecast.
    """
    limits = {name: getattr(ctx.limits, name) for name in ("per_minute", "per_hour", "per_day")}
    data: dict[str, Any] = {"practice": ctx.practice, "limits": limits}
    data |= dict.fromkeys(("per_minute", "per_hour", "last_day", "forecast"))  # not recorded
    if ctx.practice is not None:
        now = ctx.store.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
        data["per_minute"] = _buckets(ctx.store, ctx.practice, now, timedelta(minutes=1), 60)
        data["per_hour"] = _buckets(ctx.store, ctx.practice, now, timedelta(hours=1), 24)
        data["last_day"] = ctx.store.request_counts(ctx.practice, now - timedelta(days=1))
    if ctx.recipes:
        try:
            made = plan(
                list(ctx.recipes), webhook_url=ctx.webhook_url, daily_budget=limits["per_day"]
            )
        except PracticeflowError as exc:
            data["forecast"] = {"error": str(exc)}
        else:
            data["forecast"] = {
                "per_day": made.per_day,
                "share": made.share,
                "daily_budget": made.daily_budget,
                "warnings": made.warnings,
                "recipes": [
                    {name: getattr(cost, name) for name in _COST_FIELDS} for cost in made.recipes
                ],
            }
    return ctx.redactor.secrets(data)  # type: ignore[no-any-return]
