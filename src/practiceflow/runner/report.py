"""What of runs reaches people: outputs shown as identifiers only (``...Key``, ``...ID``,
``...Number``), so names, emails and amounts never reach a terminal; and the runner's log
lines, text or one JSON object per line (``--log-json``) with the record's ``extra={"pf":
{...}}`` fields (ids and statuses only, never requests or outputs) as keys.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from practiceflow.state import StepRecord

_ID_SUFFIXES = ("Key", "ID", "Id", "Number")
#: Personal numbers (spec): named like identifiers, never shown as one.
PERSONAL_NUMBERS = frozenset({"taxNumber", "regNumber", "idNumber"})


def is_identifier(key: Any, value: Any) -> bool:
    """Whether an output field is shown as an identifier (not a personal number)."""
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


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON object (``--log-json``)."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as one JSON line."""
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "pf", None)
        if isinstance(fields, dict):
            data.update({key: value for key, value in fields.items() if key not in data})
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(*, json_lines: bool, verbose: bool = False) -> None:
    """Send practiceflow's logs to stderr, as text or JSON lines (``verbose``: INFO too)."""
    handler = logging.StreamHandler()
    if json_lines:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("practiceflow")
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose or json_lines else logging.WARNING)
