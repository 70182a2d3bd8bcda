"""What needs a person: one definition for ``runs list --status in_doubt`` and the console.

A run needs a person when it is held ``in_doubt`` and

* it is quarantined (:mod:`.quarantine`), or it is a delivery held as
  ``unrecognised:<trigger>``: it has no step to settle, ``runs retry`` or ``runs cancel``
  does;
* or one of its steps is ``in_doubt`` (a write whose outcome is unknown, a gap entry).

A held run whose steps were all settled waits for ``serve`` or ``runs retry``, not a person.
"""

from __future__ import annotations

from practiceflow.runner.quarantine import is_quarantined
from practiceflow.state import RunRecord, StateStore
from practiceflow.triggers.tests_asked import HELD_RECIPE_PREFIX

__all__ = ["held_reason", "needs_person"]


def held_reason(run: RunRecord) -> str | None:
    """Why a delivery was held without running, and how to settle it; None for any other run."""
    if not run.recipe.startswith(HELD_RECIPE_PREFIX):
        return None
    error = run.error if isinstance(run.error, dict) else {}
    why = str(error.get("reason") or error.get("message") or "the trigger could not map it")
    return (
        f"a delivery held without running: {why}. If it was not a real event, settle it with "
        f"'practiceflow runs cancel {run.run_id[:8]} --reason ...'; if it was, start what it "
        "asked for by hand, then cancel it with that reason"
    )


def needs_person(store: StateStore, run: RunRecord) -> bool:
    """Whether the run waits for a person (see the module docstring)."""
    if run.status != "in_doubt":
        return False
    if is_quarantined(run) or held_reason(run) is not None:
        return True
    return any(step.status == "in_doubt" for step in store.get_steps(run.run_id))
