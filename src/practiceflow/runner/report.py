"""Readable views of runs and journals for people (the CLI and the demo print them).

Outputs are shown as identifiers only (fields named ``...Key``, ``...ID``, ``...Number``):
names, emails and amounts stay in the journal, never on a terminal.
"""

from __future__ import annotations

from typing import Any

from practiceflow.state import StepRecord

__all__ = ["brief", "detail"]

_ID_SUFFIXES = ("Key", "ID", "Id", "Number")


def brief(output: Any) -> str:
    """Identifiers of an output only (never names, emails or amounts of a person).

    Args:
        output: a step's output.

    Returns:
        Up to three ``key=value`` pairs of fields named like ids, or an item count.
    """
    if isinstance(output, list):
        return f"{len(output)} item(s)"
    if not isinstance(output, dict):
        return ""
    ids = {
        key: value
        for key, value in output.items()
        if key.endswith(_ID_SUFFIXES) and isinstance(value, str | int) and value != ""
    }
    return ", ".join(f"{key}={value}" for key, value in list(ids.items())[:3])


def detail(step: StepRecord) -> str:
    """One line on a journal entry: who resolved it, why it failed, or what it produced.

    Args:
        step: the journal entry.

    Returns:
        The line.
    """
    if step.resolved_by:
        return f"resolved by {step.resolved_by}: {step.resolution_note or ''}".strip()
    if isinstance(step.error, dict):
        for key in ("reason", "message"):
            if step.error.get(key):
                return str(step.error[key])
    if step.status == "succeeded":
        return brief(step.output)
    return ""
