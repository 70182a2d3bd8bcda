"""The names recipe templates read, and how a step's journal id is formed.

Templates under ``with``, ``if`` and ``for_each`` read:

``trigger``
    the event's payload (what the trigger module emitted);
``steps.<id>``
    the output of an earlier step; a skipped step reads as ``None``; a ``for_each`` step
    reads as the list of its iterations' outputs (``None`` for a skipped iteration);
``vars``
    the recipe's ``vars`` (literal values);
``now``
    the time the run started (UTC), the same for every step and across restarts;
``item``
    inside ``for_each``: the current element (``None`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["build_context", "iteration_id"]


def build_context(
    trigger: Any,
    steps: Mapping[str, Any],
    variables: Mapping[str, Any],
    now: datetime,
    item: Any = None,
) -> dict[str, Any]:
    """Build the template context of one step (or one ``for_each`` iteration).

    Args:
        trigger: the event payload.
        steps: step id -> output of the steps before this one.
        variables: the recipe's ``vars``.
        now: the run's start time (UTC, timezone-aware).
        item: the current ``for_each`` element.

    Returns:
        The context: ``trigger``, ``steps``, ``vars``, ``now``, ``item``.
    """
    return {
        "trigger": trigger,
        "steps": dict(steps),
        "vars": dict(variables),
        "now": now,
        "item": item,
    }


def iteration_id(step_id: str, index: int) -> str:
    """The journal id of one ``for_each`` iteration: ``stepid[index]``.

    Args:
        step_id: the step's id in the recipe.
        index: the 0-based position of the item.

    Returns:
        The id under which the iteration is journaled.
    """
    return f"{step_id}[{index}]"
