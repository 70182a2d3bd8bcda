"""Built-in local steps (:data:`LOCAL_STEPS`): what a recipe may ``use`` besides API actions.

A local step runs in-process, sends nothing, and is checked and journaled like an action.
Shipped: ``write_jsonl`` (docs/recipes-reference.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema.protocols import Validator

from practiceflow.errors import ConfigError
from practiceflow.manifest.validation import compile_validator


@dataclass(frozen=True)
class LocalContext:
    """Where a local step runs: the run and the step's journal id (``stepid[2]``)."""

    run_id: str
    step_id: str


LocalFunc = Callable[[Mapping[str, Any], LocalContext], dict[str, Any]]


@dataclass(frozen=True, eq=False)
class LocalStep:
    """A built-in step; ``output_schema`` None: references to its output are not checked."""

    key: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    input_validator: Validator
    sample: Mapping[str, Any]
    func: LocalFunc
    output_schema: Mapping[str, Any] | None = None
    needs_write: bool = False
    pii_paths: frozenset[tuple[str, ...]] = field(default_factory=frozenset)


LOCAL_STEPS: dict[str, LocalStep] = {}


def local_step(
    key: str,
    title: str,
    input_schema: Mapping[str, Any],
    sample: Mapping[str, Any],
    output_schema: Mapping[str, Any] | None = None,
) -> Callable[[LocalFunc], LocalFunc]:
    """Register the decorated function as local step ``key`` (its docstring: the description)."""

    def register(func: LocalFunc) -> LocalFunc:
        LOCAL_STEPS[key] = LocalStep(
            key=key,
            title=title,
            description=(func.__doc__ or title).strip().splitlines()[0],
            input_schema=input_schema,
            input_validator=compile_validator(input_schema),
            sample=sample,
            func=func,
            output_schema=output_schema,
        )
        return func

    return register


_JSONL_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "record"],
    "properties": {
        "path": {"type": "string", "minLength": 1, "title": "File (JSON Lines)"},
        "record": {"type": "object", "title": "Object to append as one line"},
    },
}


_JSONL_OUTPUT: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "line"],
    "properties": {"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1}},
}


@local_step(
    "write_jsonl",
    "Write a JSON line to a local file",
    _JSONL_SCHEMA,
    {"path": "out/integrations.jsonl", "line": 1},
    _JSONL_OUTPUT,
)
def write_jsonl(data: Mapping[str, Any], ctx: LocalContext) -> dict[str, Any]:
    """Append ``record`` as one JSON line to ``path``, once per run and step.

    Each line carries ``_run`` (``<run id>/<step id>``), so a resumed step finds its line.
    """
    target = Path(str(data["path"]))
    marker = f"{ctx.run_id}/{ctx.step_id}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        if target.exists() and not target.is_file():
            # /dev/full, /dev/zero or a fifo: reading it for the run's line never ends.
            message = f"write_jsonl: cannot write {target}: not a regular file"
            raise ConfigError(message)
        if target.exists():
            with target.open(encoding="utf-8") as handle:
                for count, line in enumerate(handle, start=1):
                    if marker in line and json.loads(line).get("_run") == marker:
                        return {"path": str(target), "line": count}
        record = {**dict(data["record"]), "_run": marker}
        line_text = json.dumps(record, ensure_ascii=False)
        try:
            line_text.encode("utf-8")
        except UnicodeEncodeError:
            line_text = json.dumps(record)  # a lone surrogate, kept as its escape
        with target.open("a", encoding="utf-8") as handle:
            handle.write(line_text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except (OSError, ValueError) as exc:
        message = f"write_jsonl: cannot write {target}: {exc}"
        raise ConfigError(message) from None
    return {"path": str(target), "line": count + 1}
