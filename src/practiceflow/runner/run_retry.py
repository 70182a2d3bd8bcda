"""A recipe's retry policy (``retry: {attempts, backoff}``): a run that failed on a transient
cause (the API certainly did nothing) is tried again later, or listed ``retries_exhausted``.
A write whose outcome is unknown is ``in_doubt``, never retried here. A taken attempt is
claimed for :data:`CLAIM`, so a process dying during it leaves it due again.
Users' view: docs/architecture.md.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from practiceflow.runner.validate import ValidRecipe
from practiceflow.state import RunStatus, StateStore
from practiceflow.state.rows import RunRetry

logger = logging.getLogger("practiceflow.runner")

#: Attempts in all (the first included) when a recipe declares no ``retry``.
DEFAULT_ATTEMPTS: Final = 3
#: Seconds from a failure to the first retry when a recipe declares no ``backoff``.
DEFAULT_BACKOFF: Final = 60.0
#: How long a taken attempt is claimed: a process dying during it leaves it due again after.
CLAIM: Final = timedelta(minutes=10)
#: The attention kind of a run the policy gave up on.
EXHAUSTED: Final = "retries_exhausted"

#: Errors raised only when the API certainly did nothing (see the module docstring).
_TRANSIENT: Final = frozenset({"RateLimitError", "ServerError", "TransportError"})
_ITERATION: Final = re.compile(r"\[\d+\]$")


@dataclass(frozen=True)
class RetryPolicy:
    """A recipe's ``retry``: attempts in all (1: no retry), and the first wait, doubling."""

    attempts: int = DEFAULT_ATTEMPTS
    backoff: float = DEFAULT_BACKOFF

    def delay(self, failed: int) -> timedelta:
        """The wait after the ``failed``-th failed attempt."""
        return timedelta(seconds=self.backoff * 2 ** (failed - 1))


def policy_of(recipe: ValidRecipe) -> RetryPolicy:
    """The retry policy a recipe declares (checked by ``recipe.schema.json``), or the default."""
    declared = recipe.recipe.raw.get("retry")
    if not isinstance(declared, Mapping):
        return RetryPolicy()
    return RetryPolicy(
        int(declared.get("attempts", DEFAULT_ATTEMPTS)),
        float(declared.get("backoff", DEFAULT_BACKOFF)),
    )


def transient_cause(recipe: ValidRecipe, error: Any) -> dict[str, Any] | None:
    """``{"step", "type", "status"}`` of a run's error when transient, else None (no message)."""
    if not isinstance(error, Mapping) or error.get("type") not in _TRANSIENT:
        return None
    step = str(error.get("step", ""))
    action = recipe.actions.get(_ITERATION.sub("", step))
    if action is None:
        return None
    if error["type"] == "ServerError" and action.needs_write:
        return None  # the client holds a write's 5xx in doubt; never retried on a guess
    return {"step": step, "type": error["type"], "status": error.get("status")}


def after_run(
    store: StateStore,
    recipe: ValidRecipe,
    practice: str,
    run_id: str,
    status: RunStatus,
    error: Any,
) -> None:
    """Apply the recipe's policy to a run that just ended (see the module docstring)."""
    row = store.run_retry(run_id)
    cause = transient_cause(recipe, error) if status == "failed" else None
    if cause is None:
        if row is not None and row.next_at is not None:  # ended otherwise: nothing due
            store.save_run_retry(run_id, practice, recipe.name, row.attempts, None, row.cause)
        return
    policy = policy_of(recipe)
    failed = (row.attempts if row is not None else 0) + 1
    pf = {"run": run_id, "recipe": recipe.name, "attempts": failed}
    if failed < policy.attempts:
        due = store.now() + policy.delay(failed)
        store.save_run_retry(run_id, practice, recipe.name, failed, due, cause)
        logger.warning(
            "run %s failed on a transient cause (%s); attempt %d of %d at %s",
            run_id, _describe(cause), failed + 1, policy.attempts,
            due.isoformat(timespec="seconds"), extra={"pf": pf},
        )  # fmt: skip
        return
    store.save_run_retry(run_id, practice, recipe.name, failed, None, cause)
    reason = (
        f"run {run_id} of recipe {recipe.name!r} failed {failed} time(s) on a transient cause "
        f"({_describe(cause)}) and its retry policy ({policy.attempts} attempt(s)) gave up. "
        f"Once the cause has passed, 'practiceflow runs retry {run_id}' (its succeeded steps "
        f"are not sent again), or 'practiceflow runs cancel {run_id} --reason TEXT'; then "
        "settle this entry"
    )
    evidence = {"run": run_id, "attempts": failed, "cause": cause}
    entry, _ = store.add_attention(
        EXHAUSTED, practice, recipe.name, f"retries:{run_id}:{failed}", reason, evidence=evidence
    )
    logger.error("needs attention (entry %s): %s", entry.attention_id[:8], reason, extra={"pf": pf})


def take_due(store: StateStore, practice: str, recipe: str) -> list[str]:
    """Claim the due retries of a recipe's runs; returns their ids (runs no longer failed leave)."""
    taken = []
    for row in store.due_run_retries(practice, recipe):
        run = store.get_run(row.run_id)
        if run is None or run.status != "failed":
            store.save_run_retry(row.run_id, practice, recipe, row.attempts, None, row.cause)
            continue
        if store.claim_run_retry(row.run_id, store.now() + CLAIM):
            taken.append(row.run_id)
    return taken


def retry_json(row: RunRetry | None) -> dict[str, Any] | None:
    """A run's retries as ``runs show --json`` gives them (None: never retried)."""
    if row is None:
        return None
    due = None if row.next_at is None else row.next_at.isoformat()
    return {"attempts": row.attempts, "next_at": due, "cause": row.cause}


def retry_line(row: RunRetry | None) -> str | None:
    """A run's retries as ``runs show`` says them (None: never retried)."""
    if row is None:
        return None
    cause = _describe(row.cause) if isinstance(row.cause, Mapping) else "unknown cause"
    text = f"retried: {row.attempts} attempt(s) failed on a transient cause (last: {cause})"
    if row.next_at is None:
        return f"{text}; no attempt is scheduled"
    return f"{text}; next attempt at {row.next_at.isoformat(timespec='seconds')}"


def _describe(cause: Mapping[str, Any]) -> str:
    status = f" {cause['status']}" if cause.get("status") is not None else ""
    return f"{cause['type']}{status} at step {cause['step']}"
