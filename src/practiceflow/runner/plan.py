"""``plan``: what recipes will cost in requests against the practice's budget (10,000 a day,
1,000 an hour per Client ID, spec section 8): each run's calls (steps, and checks and hooks
that read), times the assumed events a day, plus the polls (shared by recipes whose
triggers read one list: :class:`PollCost`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from practiceflow.errors import PracticeflowError
from practiceflow.hooks import CHECKS, HOOKS
from practiceflow.manifest import ActionModule, RecipeStep
from practiceflow.runner.validate import ValidRecipe
from practiceflow.templating import CompiledTemplate, render_tree, utcnow
from practiceflow.triggers import definition
from practiceflow.triggers.cadence import SWEEP_EVERY
from practiceflow.triggers.downtime import downtime_note, has_poll_source
from practiceflow.triggers.shared_poll import PollSource, poll_source

#: Requests a day per Client ID (spec section 8 default): one per 8.64 s sustained.
DAILY_BUDGET = 10_000
#: Requests an hour per Client ID (spec section 8 default).
HOURLY_BUDGET = 1_000


@dataclass(frozen=True)
class StepCost:
    """Requests one step costs per run, and how the number was reached."""

    step_id: str
    use: str
    requests: int
    note: str


@dataclass(frozen=True)
class RecipeCost:
    """What one recipe costs (``poll``: the list its trigger polls, or None)."""

    name: str
    per_run: int
    steps: list[StepCost]
    polls: bool
    poll_per_hour: float
    poll_per_day: float
    events_per_day: int
    per_day: float
    poll: str | None = None


@dataclass(frozen=True)
class PollCost:
    """One poll of a list, shared by its recipes (``sweep``: read only to catch up on webhooks)."""

    source: str
    triggers: list[str]
    recipes: list[str]
    per_hour: float
    per_day: float
    idle_per_day: float
    share: float
    sweep: bool = False


@dataclass(frozen=True)
class Plan:
    """The plan of recipes sharing one practice's credentials (``downtime``: per recipe)."""

    recipes: list[RecipeCost]
    per_day: float
    share: float
    daily_budget: int
    warnings: list[str] = field(default_factory=list)
    downtime: list[str] = field(default_factory=list)
    polls: list[PollCost] = field(default_factory=list)


def _step_cost(
    step: RecipeStep, action: object, items: int, variables: Mapping[str, Any]
) -> StepCost:
    if not isinstance(action, ActionModule):
        return StepCost(step.id, step.use, 0, "local step: no request")
    reads = [name for name in action.checks if CHECKS[name].reads]
    if action.hook and HOOKS[action.hook].reads:
        reads.append(action.hook)
    count = 1 + len(reads)
    note = "1 request" + (f" + reads of {', '.join(reads)}" if reads else "")
    if step.for_each is not None:
        known = _known_length(step.for_each, variables)
        note += f", x{items} items (assumed)" if known is None else f", x{known} items"
        count *= items if known is None else known
    return StepCost(step.id, step.use, count, note)


def _known_length(for_each: CompiledTemplate, variables: Mapping[str, Any]) -> int | None:
    """The elements a ``for_each`` yields in every run: known when it reads only ``vars``."""
    if not for_each.names <= {"vars"}:
        return None  # the list depends on the event, earlier steps or the time
    try:
        rendered = for_each.render({"vars": dict(variables)})
    except PracticeflowError:
        return None  # the run reports it; the plan falls back to the assumption
    return len(rendered) if isinstance(rendered, list) else None


def plan(
    recipes: Sequence[ValidRecipe],
    *,
    events_per_day: int = 100,
    poll_interval: float = 60.0,
    webhook_url: bool = False,
    items: int = 1,
    daily_budget: int = DAILY_BUDGET,
) -> Plan:
    """Estimate the requests recipes sharing one practice's credentials will spend together.

    ``webhook_url``: a public webhook URL is configured (``mode: auto`` then does not poll);
    ``items``: assumed elements of a ``for_each`` whose list is known only in a run.
    """
    polls = _polls(recipes, poll_interval, webhook_url, daily_budget)
    shared = {recipe: poll for poll in polls for recipe in poll.recipes}
    costs: list[RecipeCost] = []
    for recipe in recipes:
        steps = [
            _step_cost(step, recipe.actions[step.id], items, recipe.recipe.vars)
            for step in recipe.recipe.steps
        ]
        per_run = sum(step.requests for step in steps)
        poll = shared.get(recipe.name)
        # A shared poll is split between the recipes it serves: the sum counts it once.
        per_hour = poll.per_hour / len(poll.recipes) if poll is not None else 0.0
        per_day = per_run * events_per_day + per_hour * 24
        polled = poll is not None and not poll.sweep and _polled(recipe, webhook_url)
        costs.append(
            RecipeCost(
                recipe.name,
                per_run,
                steps,
                polled,
                per_hour,
                per_hour * 24,
                events_per_day,
                per_day,
                poll.source if poll is not None else None,
            )
        )
    total = sum(cost.per_day for cost in costs)
    warnings: list[str] = []
    share = total / daily_budget
    if total > daily_budget:
        warnings.append(
            f"the recipes together would spend {total:,.0f} requests a day, "
            f"{share:.0%} of the practice's {daily_budget:,} (one request per "
            f"{86400 / daily_budget:.2f} s sustained); poll less often, or fewer events"
        )
    elif share > 0.8:
        warnings.append(
            f"{share:.0%} of the daily budget: little is left for people's own calls and "
            "for catching up after an outage"
        )
    hourly = max((cost.poll_per_hour for cost in costs), default=0.0)
    if sum(cost.poll_per_hour for cost in costs) > HOURLY_BUDGET:
        warnings.append(
            f"polling alone would need {hourly:,.0f}+ requests an hour; the hourly "
            f"window is {HOURLY_BUDGET:,}"
        )
    downtime = [
        f"{recipe.name}: {downtime_note(definition(recipe.trigger), _options(recipe))}"
        for recipe in recipes
    ]
    return Plan(costs, total, share, daily_budget, warnings, downtime, polls)


def _polls(
    recipes: Sequence[ValidRecipe], poll_interval: float, webhook_url: bool, daily_budget: int
) -> list[PollCost]:
    """The practice's polls: recipes whose triggers read the same list share one."""
    groups: dict[object, list[tuple[ValidRecipe, bool]]] = {}
    for recipe in recipes:
        found = definition(recipe.trigger)
        options = _options(recipe)
        polled = _polled(recipe, webhook_url)
        if not polled and not has_poll_source(found, options):
            continue
        try:
            key: object = poll_source(found, options)
        except PracticeflowError:
            key = recipe.name  # its list needs an option the recipe does not give
        groups.setdefault(key, []).append((recipe, polled))
    polls: list[PollCost] = []
    for key, members in groups.items():
        delays = [m.recipe.max_delay for m, polled in members if polled and m.recipe.max_delay]
        if any(polled for _, polled in members):
            slowest = min(delays, default=poll_interval)
            fastest = min(poll_interval, slowest)
        else:
            slowest = fastest = SWEEP_EVERY
        per_hour = 3600.0 / fastest
        source = key.describe() if isinstance(key, PollSource) else f"the list of {key}"
        polls.append(
            PollCost(
                source=source,
                triggers=sorted({m.trigger.key for m, _ in members}),
                recipes=[m.name for m, _ in members],
                per_hour=per_hour,
                per_day=per_hour * 24,
                idle_per_day=86400.0 / slowest,
                share=per_hour * 24 / daily_budget,
                sweep=not any(polled for _, polled in members),
            )
        )
    return polls


def _polled(recipe: ValidRecipe, webhook_url: bool) -> bool:
    mode = recipe.recipe.mode
    can_poll = recipe.trigger.poll is not None
    return can_poll and (mode in ("poll", "both") or (mode == "auto" and not webhook_url))


def _options(recipe: ValidRecipe) -> dict[str, object]:
    rendered = render_tree(recipe.recipe.trigger_with, {"now": utcnow()})
    return dict(rendered) if isinstance(rendered, dict) else {}
