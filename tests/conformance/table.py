"""The modules x runtimes table of the conformance run: kept while it runs, printed after.

The rows are kept in pytest's cache (``conformance/table``), on disk, so that the process
that prints the terminal summary (the xdist controller) sees the rows a worker wrote; the
first row of a run starts a new table, and a table older than the run is not printed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest

TABLE_KEY = "conformance/table"
_started: list[float] = []

#: Columns, in order (a module's kind decides which apply; the others read ``n/a``).
RUNTIMES = ("action", "run", "worker", "mcp", "openapi")


def render(rows: Mapping[str, Mapping[str, str]]) -> str:
    """One line per ``preset/module``; a cell reads ``ok``, ``ok*`` (a declared difference,
    listed under the table), ``n/a`` or ``RED``."""
    width = max(len(name) for name in rows) + 2
    lines = [" " * width + "".join(f"{name:<9}" for name in RUNTIMES)]
    notes: list[str] = []
    for name in sorted(rows):
        cells = rows[name]
        shown = []
        for runtime in RUNTIMES:
            text = cells.get(runtime, "n/a")
            head, _, note = text.partition(": ")
            shown.append(f"{head:<9}")
            if note:
                notes.append(f"  {name} {runtime}: {note}")
        lines.append(f"{name:<{width}}" + "".join(shown))
    red = sum(1 for cells in rows.values() for text in cells.values() if text.startswith("RED"))
    lines.append(f"{len(rows)} rows, {red} red cell(s)")
    return "\n".join(lines + notes)


def record_row(config: pytest.Config, row: str, cells: Mapping[str, str]) -> None:
    """Keep one row of this run's table."""
    if getattr(config, "cache", None) is None:
        return
    if not _started:
        _started.append(time.time())
        table: dict[str, Any] = {"started": _started[0], "rows": {}}
    else:
        table = config.cache.get(TABLE_KEY, {"started": _started[0], "rows": {}})
    table["rows"][row] = dict(cells)
    config.cache.set(TABLE_KEY, table)


def summary(config: pytest.Config, session_started: float) -> str | None:
    """The table of this run, if the conformance test ran in it."""
    if getattr(config, "cache", None) is None:
        return None
    table = config.cache.get(TABLE_KEY, None)
    if not isinstance(table, dict) or table.get("started", 0) < session_started:
        return None
    rows = table.get("rows") or {}
    return render(rows) if rows else None
