"""Built-in local steps: what a recipe may ``use`` besides API actions.

A local step runs in the runner's own process and sends nothing to the API. It is named
in one registry (:data:`LOCAL_STEPS`), checked like an action (input schema, sample output)
and journaled like one. Shipped:

``write_jsonl``
    Append one JSON object per run to a local file (JSON Lines). Input: ``path`` (the
    file; its folder is created), ``record`` (the object to write). Each line carries the
    extra field ``_run`` (``<run id>/<step id>``) so that a step resumed after a crash finds
    its own line and does not append it twice. Output: ``{"path", "line"}`` (1-based line
    number of the record).
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

__all__ = ["LOCAL_STEPS", "LocalContext", "LocalStep", "local_step", "write_jsonl"]


@dataclass(frozen=True)
class LocalContext:
    """What a local step knows about where it runs.

    Attributes:
        run_id: the run.
        step_id: the step's journal id (``stepid[2]`` inside a ``for_each``).
    """

    run_id: str
    step_id: str


LocalFunc = Callable[[Mapping[str, Any], LocalContext], dict[str, Any]]


@dataclass(frozen=True, eq=False)
class LocalStep:
    """A built-in step (see the module docstring).

    Attributes:
        key: what a recipe writes in ``use``.
        title: short title.
        description: help text.
        input_schema: JSON Schema of the input.
        input_validator: compiled validator of ``input_schema``.
        sample: an example output (for ``--dry-run``).
        func: the implementation.
        output_schema: JSON Schema of the output, or None when the step declares none
            (references to its output are then not checked before a run).
        needs_write: always False: a local step never writes to the API.
        pii_paths: input paths masked in the journal (none for the shipped steps).
    """

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
    """Register a local step under ``key`` (decorator).

    Args:
        key: the name recipes use.
        title: short title.
        input_schema: JSON Schema of its input.
        sample: example output.
        output_schema: JSON Schema of the output (what later steps may read of it).

    Returns:
        The decorator; the function is registered unchanged.
    """

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

    Args:
        data: ``path`` and ``record``.
        ctx: the run and step (written as ``_run`` to find the line again after a crash).

    Returns:
        ``{"path", "line"}``.

    Raises:
        ConfigError: the file cannot be written.
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
        if not line_text.isascii() and not _utf8(line_text):
            line_text = json.dumps(record)  # a lone surrogate, kept as its escape
        with target.open("a", encoding="utf-8") as handle:
            handle.write(line_text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except (OSError, ValueError) as exc:
        message = f"write_jsonl: cannot write {target}: {exc}"
        raise ConfigError(message) from None
    return {"path": str(target), "line": count + 1}


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
