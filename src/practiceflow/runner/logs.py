"""Runner logging: text lines, or one JSON object per line (``--log-json``) with the record's
``extra={"pf": {...}}`` fields (ids and statuses only, never requests or outputs) as keys.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any


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
