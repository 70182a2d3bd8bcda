"""Logging of the runner: readable lines by default, one JSON object per line on request.

Runner log records carry their structured fields in ``extra={"pf": {...}}`` (run, recipe,
step, status, verdict...). :class:`JsonFormatter` writes them as top-level keys beside
``time`` (UTC), ``level``, ``logger`` and ``message``. Nothing in these fields is personal
or secret: requests and outputs are never logged, only ids and statuses.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "configure_logging"]


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON object (``--log-json``)."""

    def format(self, record: logging.LogRecord) -> str:
        """Render ``record`` as a JSON line.

        Args:
            record: the log record.

        Returns:
            The JSON text (no newline).
        """
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
    """Send practiceflow's logs to stderr, as text or as JSON lines.

    Args:
        json_lines: one JSON object per line (for log shippers).
        verbose: include INFO records (each step); otherwise warnings and errors only.
    """
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
