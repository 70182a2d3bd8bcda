"""The names recipe templates read (``trigger``, ``steps``, ``vars``, ``now``, ``item``: see
docs/recipes-reference.md), and a step's journal id.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def build_context(
    trigger: Any,
    steps: Mapping[str, Any],
    variables: Mapping[str, Any],
    now: datetime,
    item: Any = None,
) -> dict[str, Any]:
    """The template context of one step (``item``: the current ``for_each`` element)."""
    return {
        "trigger": trigger,
        "steps": dict(steps),
        "vars": dict(variables),
        "now": now,
        "item": item,
    }


def iteration_id(step_id: str, index: int) -> str:
    """The journal id of one ``for_each`` iteration: ``stepid[index]``."""
    return f"{step_id}[{index}]"
