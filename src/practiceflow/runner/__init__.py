"""The runner: one durable run per trigger event, from "an event was recorded" to "every step
of its run is settled" (the process that brings events is :mod:`practiceflow.service`).

It checks recipes (:mod:`.validate`), journals every step by one rule (:mod:`.journal`),
resumes and reconciles after a crash, holds runs for a person, and does dry runs and plans.
Triggers and the runner meet only in the state store.
"""

from __future__ import annotations

from practiceflow.budget import Priority, RateBudget, current_priority, priority
from practiceflow.runner.context import build_context, iteration_id
from practiceflow.runner.dryrun import DryStep, dry_run
from practiceflow.runner.execute import RECONCILER, Runner, RunOutcome, run_shared
from practiceflow.runner.journal import RunJournal
from practiceflow.runner.local import LOCAL_STEPS, LocalStep, local_step
from practiceflow.runner.reconcile import READ_BACKS, Verdict, reconcile, register_read_back
from practiceflow.runner.validate import StepAction, ValidRecipe, validate_recipe

#: The former name of :class:`~practiceflow.budget.RateBudget`.
PriorityBudget = RateBudget

__all__ = [
    "LOCAL_STEPS",
    "READ_BACKS",
    "RECONCILER",
    "DryStep",
    "LocalStep",
    "Priority",
    "PriorityBudget",
    "RunJournal",
    "RunOutcome",
    "Runner",
    "StepAction",
    "ValidRecipe",
    "Verdict",
    "build_context",
    "current_priority",
    "dry_run",
    "iteration_id",
    "local_step",
    "priority",
    "reconcile",
    "register_read_back",
    "run_shared",
    "validate_recipe",
]
