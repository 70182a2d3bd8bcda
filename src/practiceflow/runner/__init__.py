"""The runner: one durable run per trigger event, from "an event was recorded" to "every step
of its run is settled" (the process that brings events is :mod:`practiceflow.service`).

It checks recipes (:mod:`.validate`), journals every step by one rule (:mod:`.journal`),
resumes and reconciles after a crash, holds runs for a person, and does dry runs and plans.
Triggers and the runner meet only in the state store.
"""

from __future__ import annotations

from practiceflow.budget import Priority, RateBudget
from practiceflow.runner.dryrun import dry_run
from practiceflow.runner.execute import Runner, RunOutcome, run_shared
from practiceflow.runner.local import LOCAL_STEPS, local_step
from practiceflow.runner.step_executor import RECONCILER
from practiceflow.runner.validate import ValidRecipe, validate_recipe

#: The former name of :class:`~practiceflow.budget.RateBudget`.
PriorityBudget = RateBudget

__all__ = [
    "LOCAL_STEPS",
    "RECONCILER",
    "Priority",
    "PriorityBudget",
    "RunOutcome",
    "Runner",
    "ValidRecipe",
    "dry_run",
    "local_step",
    "run_shared",
    "validate_recipe",
]
