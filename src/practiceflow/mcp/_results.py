"""The shapes of tool results (each tool's ``outputSchema``): a read tool's module output
(masked fields' types left open; ``{"result": ...}`` when not an object), a write or
recipe tool's preview or run (:data:`WRITE_RESULT_SCHEMA`), ``confirm_write``'s run
(:data:`RUN_RESULT_SCHEMA`). An error is text with ``isError``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from practiceflow.export.schemas import portable_schema
from practiceflow.manifest import ActionModule

#: A write's preview: nothing was sent.
PREVIEW_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["status", "preview", "write_id", "confirm_token", "next"],
    "properties": {
        "status": {"type": "string", "const": "preview: nothing was sent"},
        "preview": {"type": "object", "description": "The request(s), masked."},
        "write_id": {"type": "string", "description": "The previewed write."},
        "confirm_token": {"type": "string", "description": "Its sealed confirmation."},
        "expires_in_seconds": {"type": "integer"},
        "next": {"type": "string", "description": "How the user confirms it."},
    },
}
#: A confirmed write's run (or a recipe's run).
RUN_RESULT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["run_id", "status", "steps", "output"],
    "properties": {
        "run_id": {"type": "string"},
        "status": {"type": "string", "description": "The run's status (succeeded...)."},
        "steps": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Each step's status.",
        },
        "output": {"type": "object", "description": "Each step's output, masked."},
        "journal": {"type": "string", "description": "Where the run is journaled."},
    },
}
#: What a write or recipe tool answers: a preview, or the run once confirmed.
WRITE_RESULT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "anyOf": [PREVIEW_SCHEMA, RUN_RESULT_SCHEMA],
}


def wraps_result(module: ActionModule) -> bool:
    """Whether a read tool answers ``{"result": output}`` (its output is not an object)."""
    return module.output.schema.get("type") != "object"


def read_result_schema(module: ActionModule) -> dict[str, Any]:
    """The output schema of a read tool (see the module docstring)."""
    # The root is never masked whole (a tag there is not a field's), as in masking.
    root = copy.deepcopy(dict(module.output.schema))
    schema = portable_schema(_unrequired({key: _open_masked(value) for key, value in root.items()}))
    if not wraps_result(module):
        return dict(schema)
    return {"type": "object", "required": ["result"], "properties": {"result": schema}}


def _unrequired(node: Any) -> Any:
    """The schema without ``required``: the API may spell a field in another letter case,
    and a client validating structured content must not refuse the answer for it."""
    if isinstance(node, list):
        return [_unrequired(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    return {
        key: _unrequired(value)
        for key, value in node.items()
        if not (key == "required" and isinstance(value, list))
    }


def _open_masked(node: Any) -> Any:
    """The schema with each personal or secret field opened to the mask ``***``: its type
    admits a string, its value constraints are dropped."""
    if isinstance(node, list):
        return [_open_masked(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    if node.get("x-pii") is True or node.get("x-secret") is True:
        opened = {key: value for key, value in node.items() if key not in _CONSTRAINTS}
        declared = node.get("type")
        if isinstance(declared, str | list):
            kinds = [declared] if isinstance(declared, str) else list(declared)
            opened["type"] = kinds if "string" in kinds else [*kinds, "string"]
        return opened
    return {key: _open_masked(value) for key, value in node.items()}


#: What a masked value (``***``) could break in a field's schema.
_CONSTRAINTS: Final = frozenset(
    {"enum", "const", "format", "pattern", "minLength", "maxLength", "$ref", "oneOf", "anyOf"}
)
