"""The runner: one durable run per trigger event.

This package owns what happens between "an event was recorded" and "every step of its run
is settled" (the long-running process that brings events and drives runners is
:mod:`practiceflow.service`):

* :mod:`.validate`: checks a recipe before anything runs (:func:`validate_recipe`);
* :mod:`.context`: the names templates read (``trigger``, ``steps``, ``vars``, ``now``,
  ``item``);
* :mod:`.local`: built-in local steps such as ``write_jsonl``;
* masking of personal values in journal, logs and dry runs: :mod:`practiceflow.engine.masking`;
* :mod:`.journal`: :class:`RunJournal`, the one rule by which a run is journaled;
* :mod:`.step_executor`: one step, sent and journaled by that rule;
* :mod:`.execute`: :class:`Runner`, one run step by step, resumable after a crash;
* :mod:`.reconcile`: read-backs that settle in-doubt writes;
* :mod:`.quarantine`: a run started too often without ending is held for a person;
* :mod:`.run_lease`: one driver per run, by a lease in the store;
* :mod:`.dryrun`: :func:`dry_run`, render everything and send nothing;
* :mod:`.plan`: :func:`plan`, what recipes will cost in requests;
* :mod:`.logs`: text or JSON log lines.

The boundary with triggers is the state store: triggers record events, the runner takes
pending events, runs them and marks them handled.
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

#: The former name of :class:`~practiceflow.budget.RateBudget`, which admits by priority.
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
