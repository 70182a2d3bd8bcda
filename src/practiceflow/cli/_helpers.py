"""Helpers of ``practiceflow run``: the dry-run listing."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.console import Console
from rich.markup import escape

from practiceflow.runner import ValidRecipe, dry_run


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
