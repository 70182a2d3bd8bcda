"""A run-unique marker (``pf-`` and ten hex digits) in the field where the API keeps a caller's
free value (``read_back.marker``), so an in-doubt write is recognised for certain when read
back; ``marker: false`` on a recipe or step turns it off (docs/modules-guide.md, read_back).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from practiceflow.hooks.read_backs import marker_in
from practiceflow.manifest import ActionModule

__all__ = ["marker_in"]


def marker_for(run_id: str, step_id: str) -> str:
    """The marker of one step (one ``for_each`` item) of one run."""
    digest = hashlib.sha256(f"{run_id}/{step_id}".encode()).hexdigest()
    return "pf-" + digest[:10]


def enabled(raw_recipe: Mapping[str, Any], step_id: str) -> bool:
    """Whether the step writes a marker: its own ``marker`` key, else the recipe's, else on."""
    steps = raw_recipe.get("steps")
    for raw in steps if isinstance(steps, list) else []:
        if isinstance(raw, Mapping) and raw.get("id") == step_id and "marker" in raw:
            return raw["marker"] is not False
    return raw_recipe.get("marker") is not False


def add_marker(action: ActionModule, data: Any, marker: str) -> Any:
    """The step's input with the marker in the action's declared free field (if any)."""
    declared = action.read_back
    name = declared.marker_field if declared is not None else None
    if declared is None or name is None or not isinstance(data, Mapping):
        return data
    current = data.get(name)
    if declared.marker_placement == "when_empty":
        return data if current else {**data, name: marker}
    if isinstance(current, str) and current.strip():
        return {**data, name: f"{current} [{marker}]"}
    return {**data, name: f"[{marker}]"}
