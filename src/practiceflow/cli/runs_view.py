"""How ``run --dry-run``, ``runs list`` and ``runs show`` present runs: the table (its
columns fit the terminal, identifiers never break), a run as JSON, outputs as identifiers
only, a dry run one block per step."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from practiceflow.runner import ValidRecipe, dry_run
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


def print_dry(recipe: ValidRecipe, as_json: bool, console: Console) -> bool:
    """Print a dry run; return whether every step rendered without an error."""
    steps = dry_run(recipe)
    sound = all(step.status != "error" for step in steps)
    if as_json:
        click.echo(json.dumps([asdict(step) for step in steps], indent=2, default=str))
        return sound
    # One block per step, not a table: a request's URL and keys must never be cut.
    console.print(f"[bold]dry run of {escape(repr(recipe.name))}[/]: nothing is sent")
    for step in steps:
        console.print(f"\n[bold]{escape(step.step_id)}[/] ({escape(step.use)}): {step.status}")
        request = step.request
        if isinstance(request, dict) and "method" in request:
            url = request.get("url", request.get("path", ""))
            click.echo(f"  {request['method']} {url}")
            if request.get("json") is not None:
                click.echo("  " + json.dumps(request["json"], default=str, ensure_ascii=False))
        elif request is not None:
            click.echo("  " + json.dumps(request, default=str, ensure_ascii=False))
        for note in [step.note] if step.note else step.warnings:
            click.echo(f"  ({note})")
    if not sound:
        errors = sum(step.status == "error" for step in steps)
        click.echo(f"{errors} step{'s' if errors != 1 else ''} failed to render", err=True)
    return sound
