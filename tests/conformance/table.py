"""The modules x runtimes table of the conformance run, as text."""

from __future__ import annotations

from collections.abc import Mapping

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
