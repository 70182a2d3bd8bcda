"""Which recipe a run is driven with: its own version, whatever the files say now; one that
cannot be rebuilt holds the run for a person (:func:`version_hold`), never runs it on
something else. :func:`orphan_runs` finds unfinished runs of recipes no longer served.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from practiceflow.runner.quarantine import VERSION_HELD, is_quarantined
from practiceflow.runner.validate import ValidRecipe
from practiceflow.state import RunRecord, StateStore
from practiceflow.versions.recorded import VersionUnavailable, load_version, rebuild, short


def recipe_for_run(
    store: StateStore, run: RunRecord, served: ValidRecipe, served_digest: str | None
) -> ValidRecipe:
    """The recipe a run is driven with, given the runner's ``served`` one and its digest;
    VersionUnavailable: its version cannot be rebuilt, or it has none and is not served."""
    if run.version is None:
        if run.recipe != served.name:
            message = (
                f"run {run.run_id} of recipe {run.recipe!r} was started before versions were "
                f"recorded, and that recipe is not served here (serving {served.name!r})"
            )
            raise VersionUnavailable(message)
        # Its own version is unknown: the served one, unless it lacks a step the run took.
        ids = {step.id for step in served.recipe.steps}
        for step in store.get_steps(run.run_id):
            if step.status != "pending" and step.step_id.split("[", 1)[0] not in ids:
                message = (
                    f"run {run.run_id} was started before versions were recorded, and its "
                    f"step {step.step_id!r} is not in the recipe served now"
                )
                raise VersionUnavailable(message)
        return served
    if run.version == served_digest:
        return served
    return rebuild(load_version(store, run.version))


def version_hold(run: RunRecord, exc: VersionUnavailable) -> dict[str, Any]:
    """The error a run is held with when its version cannot be rebuilt."""
    reason = (
        f"held: {exc}. Nothing was sent under another version. Bring back what it needs "
        f"(the hook, the module), then 'practiceflow runs retry {run.run_id}'; or give it up "
        f"with 'practiceflow runs cancel {run.run_id} --reason TEXT'"
    )
    return {"kind": VERSION_HELD, "reason": reason, "version": short(run.version)}


def orphan_runs(
    store: StateStore, practice: str, served: Collection[str], *, settled_only: bool
) -> list[RunRecord]:
    """Unfinished runs of a practice whose recipe is not among ``served``: those left
    ``running`` (unless ``settled_only``) and ``in_doubt`` ones a person has settled."""
    found = (
        [] if settled_only else store.list_runs(practice=practice, status="running", limit=10_000)
    )
    for run in store.list_runs(practice=practice, status="in_doubt", limit=10_000):
        settled = not is_quarantined(run) and not any(
            step.status == "in_doubt" for step in store.get_steps(run.run_id)
        )
        if settled:
            found.append(run)
    # Entries that are not recipe runs (gaps, subscriptions in doubt, held deliveries)
    # have no origin: a runner never drives them.
    return [run for run in found if run.recipe not in served and isinstance(run.origin, Mapping)]


def settle_orphan_event(store: StateStore, run: RunRecord, sources: Collection[str]) -> None:
    """Mark the event of an ended run no longer served handled, unless a served recipe still
    takes events from its source (its own run marks it; marking it here would lose it)."""
    origin = run.origin if isinstance(run.origin, Mapping) else {}
    source = origin.get("source")
    if not isinstance(source, str) or source in sources:
        return
    event = store.get_event(run.practice, source, run.event_id)
    if event is not None and event.handled_at is None:
        store.mark_event_handled(run.practice, source, run.event_id)
