"""The upgrade gate: runs in flight replayed against a new version, and the explicit
migration of those that ``can move``: every step it took is in the new version with the same
id and action, every write would be sent alike and no new step comes before one it took (so
nothing is sent twice); else it ``stays`` on its own version or ``needs a person``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from practiceflow.runner.validate import ValidRecipe
from practiceflow.state import RunRecord, RunStatus, StateStore
from practiceflow.versions._rerender import Replay, replay
from practiceflow.versions.recorded import (
    RecipeVersion,
    VersionUnavailable,
    load_version,
    rebuild,
    save_version,
)

Decision = Literal["on it", "can move", "stays", "needs a person"]

#: Statuses of a run in flight.
IN_FLIGHT: tuple[RunStatus, ...] = ("pending", "running", "in_doubt")


@dataclass(frozen=True)
class RunCheck:
    """What the gate says of one run (module docstring): the step the decision turns on,
    why (for people), and the run replayed under the new version."""

    run: RunRecord
    decision: Decision
    step: str | None
    reason: str
    replayed: Replay


def in_flight(store: StateStore, recipe: str, practice: str | None = None) -> list[RunRecord]:
    """The unfinished runs of a recipe (by name), oldest first."""
    found = [
        run
        for status in IN_FLIGHT
        for run in store.list_runs(practice=practice, recipe=recipe, status=status, limit=10_000)
    ]
    return sorted(found, key=lambda run: (run.created_at, run.run_id))


def check_runs(
    store: StateStore, runs: list[RunRecord], new: ValidRecipe, digest: str | None
) -> list[RunCheck]:
    """Decide, for each run, whether it can move to ``new`` (module docstring), whose
    digest is ``digest`` (None: it has none, so no run can move to it)."""
    return [_check(store, run, new, digest) for run in runs]


def _check(store: StateStore, run: RunRecord, new: ValidRecipe, digest: str | None) -> RunCheck:
    replayed = replay(store, run, new)
    if digest is not None and run.version == digest:
        return RunCheck(run, "on it", None, "it runs on this version already", replayed)
    steps = store.get_steps(run.run_id)
    doubt = next((step for step in steps if step.status == "in_doubt"), None)
    if doubt is not None:
        why = "its write is in doubt: settle it first ('practiceflow runs resolve')"
        return RunCheck(run, "needs a person", doubt.step_id, why, replayed)
    blocker = _blocker(replayed, new, [step.step_id for step in steps if step.status != "pending"])
    if blocker is None and digest is not None and replayed.problem is None:
        return RunCheck(run, "can move", None, "every step it took is the same in it", replayed)
    step, why = blocker or (None, replayed.problem or "the new version has no stored form")
    try:
        if run.version is None:
            raise VersionUnavailable("it was started before versions were recorded")
        rebuild(load_version(store, run.version))
    except VersionUnavailable as exc:
        reason = f"{why}; and it cannot finish on its own version: {exc}"
        return RunCheck(run, "needs a person", step, reason, replayed)
    return RunCheck(run, "stays", step, f"{why}: it finishes on its own version", replayed)


def _blocker(replayed: Replay, new: ValidRecipe, taken: list[str]) -> tuple[str, str] | None:
    """The first step that keeps a run off the new version, and why; None: it can move."""
    by_id = {step.step_id: step for step in replayed.steps}
    uses = {step.id: step.use for step in new.recipe.steps}
    order = [step.id for step in new.recipe.steps]
    for sid in taken:
        base = sid.split("[", 1)[0]
        shown = by_id.get(sid)
        if base not in uses:
            return sid, f"step {sid!r} it took is not in the new version"
        if shown is None or shown.matched != sid:
            return sid, f"step {sid!r} it took is not matched in the new version"
        if shown.writes and shown.verdict != "same":
            return sid, f"step {sid!r} would write otherwise ({shown.verdict})"
    bases = {sid.split("[", 1)[0] for sid in taken}
    last = max((order.index(base) for base in bases), default=-1)
    for sid in order[: last + 1]:
        if sid not in bases:
            return sid, f"the new version has step {sid!r} before steps the run took"
    return None


def migrate(store: StateStore, checks: list[RunCheck], version: RecipeVersion) -> list[str]:
    """Move every run the gate said can move to ``version`` (stored first); returns the
    ids moved (a run that changed version meanwhile is left)."""
    digest = save_version(store, version)
    return [
        check.run.run_id
        for check in checks
        if check.decision == "can move"
        and store.move_run_version(check.run.run_id, check.run.version, digest)
    ]
