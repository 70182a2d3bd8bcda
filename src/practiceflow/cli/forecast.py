"""``practiceflow plan``: what recipes will cost of the practice's rate budget."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from practiceflow.cli.common import json_option, modules_option, terminal
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from practiceflow.runner.plan import plan as make_plan


@click.command("plan")
@click.argument("recipes", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--events-per-day", default=100, show_default=True, help="Runs a day per recipe.")
@click.option("--poll-interval", default=60.0, show_default=True, help="Seconds between polls.")
@click.option("--webhook-url", is_flag=True, help="A public webhook URL is configured.")
@click.option(
    "--items",
    default=1,
    show_default=True,
    help="Items assumed per for_each step whose list is known only in a run.",
)
@modules_option
@json_option
def plan(
    recipes: tuple[str, ...], modules_dirs: tuple[Path, ...], as_json: bool, **assumed: Any
) -> None:
    """Print what recipes will cost in requests, against the practice's 10,000 a day.

    \b
    Example:
      practiceflow plan recipes/*.yaml --events-per-day 40 --poll-interval 300
    """
    registry = load_modules(list(modules_dirs))
    checked = [validate_recipe(path, registry=registry) for path in recipes]
    result = make_plan(checked, **assumed)  # the options are the forecast's by name
    if as_json:
        click.echo(json.dumps(asdict(result), indent=2))
    else:
        console = terminal()
        table = Table(title="requests per recipe")
        for column in ("recipe", "per run", "runs/day", "polling/hour", "polling/day", "per day"):
            table.add_column(column, justify="right" if column != "recipe" else "left")
        for cost in result.recipes:
            table.add_row(
                cost.name,
                str(cost.per_run),
                str(cost.events_per_day),
                f"{cost.poll_per_hour:.0f}",
                f"{cost.poll_per_day:.0f}",
                f"{cost.per_day:,.0f}",
            )
        console.print(table)
        for poll in result.polls:
            if poll.sweep:
                console.print(
                    f"sweep {poll.source}: {poll.per_day:,.0f} requests a day, to catch up "
                    f"what webhook deliveries missed; for {', '.join(poll.triggers)}"
                )
                continue
            console.print(
                f"poll {poll.source}: {poll.per_day:,.0f} requests a day ({poll.share:.1%} of "
                f"the budget), {poll.idle_per_day:,.0f} while the practice is quiet; "
                f"shared by {', '.join(poll.triggers)}"
            )
        for cost in result.recipes:
            for step in cost.steps:
                console.print(f"  {cost.name} / {step.step_id}: {step.requests} ({step.note})")
        per_day, budget = result.per_day, result.daily_budget
        use = f"{per_day:,.0f} requests a day"
        if per_day > 0:
            use += f" (on average one every {86400 / per_day:,.2f} s)"
        console.print(
            f"together: {use} = {result.share:.1%} of the daily budget of {budget:,} "
            f"(which allows one request every {86400 / budget:.2f} s)"
        )
        for note in result.downtime:
            console.print(f"while serve is down: {note}")
        for warning in result.warnings:
            console.print(f"[bold red]warning:[/] {warning}")
    if result.warnings and result.per_day > result.daily_budget:
        click.get_current_context().exit(1)
