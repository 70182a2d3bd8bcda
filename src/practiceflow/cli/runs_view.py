"""How ``practiceflow runs list`` and ``runs show`` present runs: the table (its columns
fit the terminal, identifiers never break), a run as JSON, outputs as identifiers only."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.cells import cell_len
from rich.table import Table

from practiceflow.runner.quarantine import is_quarantined
from practiceflow.runner.report import is_identifier
from practiceflow.state import RunRecord


def identifiers(output: Any) -> Any:
    """A step's output as JSON values, identifiers only (as ``brief`` shows them)."""
    if isinstance(output, list):
        return [identifiers(item) for item in output]
    if not isinstance(output, dict):
        return None
    return {key: value for key, value in output.items() if is_identifier(key, value)}


def status_label(record: RunRecord, needs_person: bool) -> str:
    if is_quarantined(record):
        return "in_doubt (quarantined)"
    if record.status == "in_doubt" and not needs_person:
        return "in_doubt (settled)"
    return record.status


def run_json(record: RunRecord) -> dict[str, Any]:
    data = asdict(record)
    # The event's payload holds personal data: the console shows it masked, never this.
    origin = record.origin if isinstance(record.origin, dict) else {}
    data["origin"] = {key: value for key, value in origin.items() if key != "payload"}
    data["created_at"] = record.created_at.isoformat()
    data["updated_at"] = record.updated_at.isoformat()
    return data


def measure(console: Any, table: Table) -> Any:
    return console.measure(table, options=console.options.update_width(10_000))


def runs_table(found: list[RunRecord], rows: list[tuple[str, ...]], *, with_version: bool) -> Table:
    """The runs listing: the run id and the recipe name (what --recipe matches) never
    break; the status and the time wrap at their spaces instead."""
    table = Table(title=f"runs ({len(found)})", box=None, header_style="bold", pad_edge=False)
    longest_id = max((cell_len(row[0]) for row in rows), default=3)
    longest_name = max((cell_len(record.recipe) for record in found), default=6)
    table.add_column("run", no_wrap=True, min_width=longest_id)
    table.add_column("recipe", no_wrap=True, min_width=longest_name)
    table.add_column("status")
    table.add_column("steps", no_wrap=True)
    if with_version:
        table.add_column("version", no_wrap=True)
    table.add_column("updated (UTC)")
    for row in rows:
        table.add_row(*(row if with_version else row[:4] + row[5:]))
    return table
