"""Helpers of ``practiceflow run`` and ``serve``: the dry-run listing and the crash-test hook."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from dataclasses import asdict

import click
from rich.console import Console
from rich.markup import escape

from practiceflow.runner import ValidRecipe, dry_run

__all__ = ["KILL_ENV", "kill_hook", "print_dry"]

#: Test hook: the runner SIGKILLs itself when it reaches this journal point (``sent:bill``;
#: ``sent:bill#2``: the second time, in the second run).
KILL_ENV = "PRACTICEFLOW_TEST_KILL_AT"


def kill_hook() -> Callable[[str], None] | None:
    """The journal-point hook ``PRACTICEFLOW_TEST_KILL_AT`` asks for, or None."""
    wanted = os.environ.get(KILL_ENV)
    if not wanted:
        return None
    label, _, nth = wanted.rpartition("#")
    count = 1
    if label and nth.isdigit():
        wanted, count = label, int(nth)
    left = [count]

    def point(label: str) -> None:
        if label == wanted:
            left[0] -= 1
            if not left[0]:
                os.kill(os.getpid(), signal.SIGKILL)

    return point


def print_dry(recipe: ValidRecipe, as_json: bool, console: Console) -> None:
    steps = dry_run(recipe)
    if as_json:
        click.echo(json.dumps([asdict(step) for step in steps], indent=2, default=str))
        return
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
