"""Readable views of runs for people: outputs shown as identifiers only (``...Key``, ``...ID``,
``...Number``); names, emails and amounts never reach a terminal.
"""

from __future__ import annotations

from typing import Any

from practiceflow.state import StepRecord

_ID_SUFFIXES = ("Key", "ID", "Id", "Number")
#: Personal numbers (spec): named like identifiers, never shown as one.
PERSONAL_NUMBERS = frozenset({"taxNumber", "regNumber", "idNumber"})


def is_identifier(key: Any, value: Any) -> bool:
    """Whether an output field is shown as an identifier (``...Key``, ``...ID``,
    ``...Number``, not a personal number)."""
    return (
        isinstance(key, str)
        and key.endswith(_ID_SUFFIXES)
        and key not in PERSONAL_NUMBERS
        and isinstance(value, str | int)
        and value != ""
    )


def brief(output: Any) -> str:
    """Up to three identifier fields of an output (``key=value``), or an item count."""
    if isinstance(output, list):
        return f"{len(output)} item(s)"
    if not isinstance(output, dict):
        return ""
    ids = {key: value for key, value in output.items() if is_identifier(key, value)}
    return ", ".join(f"{key}={value}" for key, value in list(ids.items())[:3])


def detail(step: StepRecord) -> str:
    """One line on a journal entry: who resolved it, why it failed, or what it produced."""
    if step.resolved_by:
        return f"resolved by {step.resolved_by}: {step.resolution_note or ''}".strip()
    if isinstance(step.error, dict):
        for key in ("reason", "message"):
            if step.error.get(key):
                return str(step.error[key])
    if step.status == "succeeded":
        return brief(step.output)
    return ""
