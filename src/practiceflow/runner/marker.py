"""A run-unique marker in the fields where the API keeps a caller's free value.

Before a write whose body has such a field, the runner puts a short marker derived from the
run and the step (``pf-`` and ten hex digits, the same every time the step is rendered) into
it, so that an in-doubt write can be recognised for certain when it is read back
(:mod:`practiceflow.runner.reconcile`):

The field is declared by the action module (``read_back.marker``): ``field`` and a
``placement``, ``when_empty`` (``create_client``'s ``externalSystemID``: only when the recipe
leaves it empty, the caller's own identifier already names the client) or ``append``
(``create_bill``'s ``billDetails``: in brackets after the recipe's text,
``Onboarding services [pf-3f9a0c1d2e]``).

It is on by default and visible in the practice's records; ``marker: false`` at the top of a
recipe, or on one step, turns it off (then only the other evidence rules apply).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from practiceflow.hooks.read_backs import marker_in
from practiceflow.manifest import ActionModule

__all__ = ["add_marker", "enabled", "marker_for", "marker_in"]


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
    """The step's input with the marker in the action's declared free field (unchanged
    when it declares none)."""
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
