"""What the server offers: a tool per action module, a tool per recipe, the confirm tool.

A tool is described by its module alone, the form a person sees in ``practiceflow modules
show``; a write tool is listed even when writes are off, saying so, so an assistant can tell
the user what it cannot do. Each tool declares the shape of its result (``outputSchema``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import mcp_types as types

from practiceflow.export.schemas import portable_schema
from practiceflow.manifest import ActionModule, ModuleRegistry
from practiceflow.runner import ValidRecipe

#: The tool an assistant calls with a confirm token to send a previewed write.
CONFIRM_TOOL = "confirm_write"
#: Prefix of the tools that run a recipe for one event.
RECIPE_PREFIX = "run_recipe_"

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
    schema = portable_schema(_loosened(module.output.schema, root=True))
    if not wraps_result(module):
        return dict(schema)
    return {"type": "object", "required": ["result"], "properties": {"result": schema}}


def _loosened(node: Any, opens: bool = True, root: bool = False) -> Any:
    """The schema without ``required`` (the API may spell a field in another letter case, and
    a client validating structured content must not refuse the answer for it), each personal
    or secret field opened to the mask ``***``: its type admits a string, its value
    constraints are dropped."""
    if isinstance(node, list):
        return [_loosened(item, opens) for item in node]
    if not isinstance(node, Mapping):
        return node
    masked = opens and not root and (node.get("x-pii") is True or node.get("x-secret") is True)
    shown = {
        key: _loosened(value, opens and not masked)
        for key, value in node.items()
        if not (key == "required" and isinstance(value, list))
        and not (masked and key in _CONSTRAINTS)
    }
    declared = node.get("type")
    if masked and isinstance(declared, str | list):
        kinds = [declared] if isinstance(declared, str) else list(declared)
        shown["type"] = kinds if "string" in kinds else [*kinds, "string"]
    return shown


#: What a masked value (``***``) could break in a field's schema.
_CONSTRAINTS: Final = frozenset(
    {"enum", "const", "format", "pattern", "minLength", "maxLength", "$ref", "oneOf", "anyOf"}
)

ToolKind = Literal["read", "write", "recipe", "confirm"]


@dataclass(frozen=True)
class ToolEntry:
    """One tool and what it runs: ``read`` runs at once; ``write`` and ``recipe`` preview,
    then need a confirmation; ``confirm`` sends a previewed write."""

    tool: types.Tool
    kind: ToolKind
    action: ActionModule | None = None
    recipe: ValidRecipe | None = None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    @property
    def writes(self) -> bool:
        """Whether calling it can change the practice's data (it needs a confirmation)."""
        if self.kind == "write":
            return True
        return self.kind == "recipe" and self.recipe is not None and bool(self.recipe.writes())


def _object_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    # Lists of types spelled as anyOf: clients (the MCP Inspector) warn on `type: [x, null]`.
    shown = dict(portable_schema(copy.deepcopy(dict(schema))))
    shown.setdefault("type", "object")
    return shown


_WRITE_NOTE = (
    " Writes to the practice's records: the first call answers with a preview of the exact "
    "request and sends nothing; it is sent only after the user confirms (in the assistant "
    f"app, or by calling {CONFIRM_TOOL} with the preview's confirm_token and the code the "
    "user reads on the server's terminal)."
)
#: Methods whose write may change or remove what exists (a tool's ``destructiveHint``); a
#: POST adds a record.
_OVERWRITING = frozenset({"PUT", "PATCH", "DELETE"})
_OFF_NOTE = (
    " Off on this server: it was started without --allow-writes (or its credentials cannot "
    "write), so a call is refused and nothing is sent."
)


def _choice_note(module: ActionModule) -> str:
    parts = []
    for path, source in module.choices.items():
        shown = "".join("[]" if part == "*" else f".{part}" for part in path).lstrip(".")
        field = f" (its {source.value})" if source.value else ""
        parts.append(f"{shown}: a row of {source.action}{field}")
    if not parts:
        return ""
    return " Allowed values come from list tools: " + "; ".join(parts) + "."


def _action_tool(module: ActionModule, writes_on: bool) -> ToolEntry:
    description = module.description.strip() + _choice_note(module)
    writes = module.needs_write
    if writes:
        description += _WRITE_NOTE if writes_on else _OFF_NOTE
    annotations = types.ToolAnnotations(
        title=module.title,
        read_only_hint=not writes,
        destructive_hint=writes and module.request.method.upper() in _OVERWRITING,
        idempotent_hint=not writes,
        open_world_hint=True,
    )
    tool = types.Tool(
        name=module.key,
        title=module.title,
        description=description,
        input_schema=_object_schema(module.input_schema),
        output_schema=WRITE_RESULT_SCHEMA if writes else read_result_schema(module),
        annotations=annotations,
    )
    return ToolEntry(tool, "write" if writes else "read", action=module)


def recipe_tool_name(recipe: ValidRecipe) -> str:
    """The tool name of a recipe: ``run_recipe_`` and its file's stem, as a key."""
    stem = re.sub(r"[^a-z0-9_]+", "_", Path(recipe.source).stem.lower()).strip("_")
    return RECIPE_PREFIX + (stem or "recipe")


def _recipe_tool(recipe: ValidRecipe, writes_on: bool) -> ToolEntry:
    trigger = recipe.trigger
    schema = _object_schema(trigger.output_schema)
    if trigger.sample:
        schema["examples"] = [copy.deepcopy(dict(trigger.sample))]
    steps = ", ".join(f"{step.id} ({step.use})" for step in recipe.recipe.steps)
    description = (
        f"Runs the recipe {recipe.name!r} once for one {trigger.title} event given as input "
        f"(the shape of the trigger's events). Steps: {steps}."
    )
    if recipe.recipe.description:
        description = f"{recipe.recipe.description.strip()} {description}"
    writes = bool(recipe.writes())
    if writes:
        description += _WRITE_NOTE if writes_on else _OFF_NOTE
    methods = {
        str(getattr(getattr(action, "request", None), "method", "")).upper()
        for action in recipe.actions.values()
    }
    annotations = types.ToolAnnotations(
        title=f"Run recipe: {recipe.name}",
        read_only_hint=not writes,
        destructive_hint=writes and bool(methods & _OVERWRITING),
        idempotent_hint=not writes,
        open_world_hint=True,
    )
    tool = types.Tool(
        name=recipe_tool_name(recipe),
        title=f"Run recipe: {recipe.name}",
        description=description,
        input_schema=schema,
        output_schema=WRITE_RESULT_SCHEMA,
        annotations=annotations,
    )
    return ToolEntry(tool, "recipe", recipe=recipe)


def _confirm_tool() -> ToolEntry:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["confirm_token"],
        "properties": {
            "confirm_token": {
                "type": "string",
                "title": "Confirm token",
                "description": "The confirm_token of a write's preview. Call this only after "
                "the user has seen the preview and said yes; sending the same token again "
                "never sends the request twice.",
                "examples": ["pfw1.gAAAAABn..."],
            },
            "user_code": {
                "type": "string",
                "title": "User's confirmation code",
                "description": "The 6-digit code the practiceflow server printed for this "
                "preview on its terminal (or the assistant app's MCP log), as the user gives "
                "it to you. It is never in a tool result: ask the user, never guess.",
                "examples": ["482913"],
            },
        },
    }
    tool = types.Tool(
        name=CONFIRM_TOOL,
        title="Confirm a previewed write",
        description="Sends a write that a tool previewed, once the user has confirmed it. "
        "The request sent is exactly the previewed one, at most once whichever server "
        "process receives the confirmation; the answer is the write's result, and the run "
        "is in the practice's journal ('practiceflow runs').",
        input_schema=schema,
        output_schema=RUN_RESULT_SCHEMA,
        annotations=types.ToolAnnotations(
            title="Confirm a previewed write",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=True,
        ),
    )
    return ToolEntry(tool, "confirm")


def build_catalog(
    registry: ModuleRegistry, recipes: Iterable[ValidRecipe], *, writes_on: bool
) -> dict[str, ToolEntry]:
    """Every tool of the server, by name; ValueError when two recipes map to the same tool
    name, or one to an action's key."""
    catalog: dict[str, ToolEntry] = {}
    for key in sorted(registry.actions):
        catalog[key] = _action_tool(registry.actions[key], writes_on)
    for recipe in recipes:
        entry = _recipe_tool(recipe, writes_on)
        if entry.name in catalog:
            message = f"{recipe.source}: its tool name {entry.name!r} is taken; rename the file"
            raise ValueError(message)
        catalog[entry.name] = entry
    catalog[CONFIRM_TOOL] = _confirm_tool()
    return catalog


def settings_lists(registry: ModuleRegistry) -> list[ActionModule]:
    """The read-only ``list_*`` actions that need no input: the lookup lists (entity types,
    lead sources, users, templates...) an assistant reads before it fills a form.
    """
    return [
        module
        for key, module in sorted(registry.actions.items())
        if key.startswith("list_") and not module.needs_write and not module.required
    ]
