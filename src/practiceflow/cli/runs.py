"""``practiceflow run | serve | runs | plan``: run recipes durably and look after their runs
(``run`` and ``runs retry`` exit 1 when a run failed, 5 when one is held in doubt), and how
runs are shown: tables fit the terminal, identifiers never break, outputs as identifiers."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from practiceflow.api import Client
from practiceflow.cli.attention import cancel, entry_json, resolve
from practiceflow.cli.common import (
    ApiOptions,
    api_options,
    echo_json,
    json_option,
    log_json_option,
    modules_option,
    terminal,
    verbose_option,
)
from practiceflow.cli.forecast import plan
from practiceflow.cli.retention import check_since, purge
from practiceflow.cli.serving import announce, serve_recipes
from practiceflow.cli.state import (
    open_state,
    practice_client,
    practice_key,
    practice_option,
    run_or_fail,
    state_option,
)
from practiceflow.cli.versions import run_recipe
from practiceflow.errors import EXIT_CODES, ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, RunOutcome, ValidRecipe, dry_run, validate_recipe
from practiceflow.runner.quarantine import is_quarantined, quarantine_reason
from practiceflow.runner.report import configure_logging, detail, is_identifier
from practiceflow.runner.run_lease import RunDrivenElsewhere
from practiceflow.runner.run_retry import retry_json, retry_line
from practiceflow.service.intake import build_intake
from practiceflow.service.loop import Service
from practiceflow.service.needs_person import label, needs_person
from practiceflow.state import RUN_STATUSES, RunRecord
from practiceflow.state.request_log import RequestLog
from practiceflow.state.rows import FINISHED
from practiceflow.versions import load_version, rebuild, short

_since_option = click.option(
    "--since",
    metavar="ISO",
    callback=check_since,
    help="Triggers polled for the first time start here (ISO 8601, such as "
    "2026-11-01T00:00:00Z) instead of 'from now', so earlier changes fire too.",
)


def _exit_for(outcomes: Sequence[RunOutcome]) -> int:
    statuses = {outcome.status for outcome in outcomes}
    return EXIT_CODES["in_doubt"] if "in_doubt" in statuses else int("failed" in statuses)


@contextmanager
def _connect(
    api: ApiOptions,
    paths: Sequence[str],
    dirs: Sequence[Path],
    practice: str | None,
    state: str | None,
) -> Iterator[tuple[Client, list[ValidRecipe], str]]:
    """The client (the practice's budget shared on ``state``), checked recipes, and key."""
    registry = load_modules(list(dirs))
    for path in paths:  # report recipe problems before the first request
        validate_recipe(path, registry=registry)
    with practice_client(api, state) as client:
        can_write = client.validate().can_write
        recipes = [validate_recipe(path, registry=registry, can_write=can_write) for path in paths]
        yield client, recipes, practice_key(practice, client.settings.client_id)


@click.command("run")
@click.argument("recipe", type=click.Path(exists=True, dir_okay=False))
@click.option("--once", is_flag=True, help="Poll once, run what arrived, and exit.")
@click.option(
    "--dry-run", is_flag=True, help="Render every step with sample outputs; send nothing."
)
@practice_option
@_since_option
@state_option
@modules_option
@json_option
@log_json_option
@verbose_option
@api_options
def run(
    recipe: str,
    once: bool,
    dry_run: bool,
    practice: str | None,
    since: str | None,
    state: str | None,
    modules_dirs: tuple[Path, ...],
    as_json: bool,
    log_json: bool,
    verbose: bool,
    api: ApiOptions,
) -> None:
    """Run one recipe: check it, then run its events (continuously, or --once).

    On a trigger's first poll nothing fires: the poll sets a baseline, and only changes
    after it become events (--since starts earlier).

    \b
    Examples:
      practiceflow run recipes/proposal_to_bill_and_eform.yaml --dry-run
      practiceflow run recipes/new_client_integrations_to_jsonl.yaml --once --json
      practiceflow run recipes/won_lead_to_client.yaml --once --since 2026-11-01T00:00:00Z
      practiceflow run recipes/proposal_to_bill_and_eform.yaml     # until SIGTERM
    """
    configure_logging(json_lines=log_json, verbose=verbose)
    console = terminal(stderr=as_json)
    if dry_run:
        checked = validate_recipe(recipe, registry=load_modules(list(modules_dirs)))
        for note in checked.notes:
            click.echo(f"note: {note}", err=True)
        if not print_dry(checked, as_json, console):
            click.get_current_context().exit(1)
        return
    if not once:
        serve_recipes(
            [recipe], practice, state, modules_dirs, api, since=since, listen_socket=_early_socket()
        )
        return
    with (
        _connect(api, [recipe], modules_dirs, practice, state) as (client, recipes, key),
        open_state(state) as store,
        RequestLog(store, key) as counted,
    ):
        client.budget.on_admit(counted.admitted)  # the console's budget chart
        runner = Runner(recipes[0], store, client, practice=key)
        outcomes: list[RunOutcome] = []
        intake = build_intake(recipes, store, client, key, since=since, on_started=announce)
        service = Service([runner], store, intake)
        pending = len(store.pending_events(key, 10_000, source=runner.source))
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=terminal(stderr=True),
            transient=True,
            disable=as_json or pending < 5,
        ) as progress:
            task = progress.add_task("events", total=pending or None)

            def seen(outcome: RunOutcome) -> None:
                outcomes.append(outcome)
                progress.advance(task)

            service.on_outcome = seen
            service.install_signal_handlers()
            service.run_once()
        if as_json:
            click.echo(json.dumps([asdict(outcome) for outcome in outcomes], default=str))
        elif outcomes:
            _print_outcomes(outcomes)
        else:
            console.print("no events to run")
        if intake.baselines and not outcomes:
            click.echo(
                f"hint: the first poll sets a baseline ({', '.join(intake.baselines)}): "
                "only changes from now on fire. Run again after a change, or "
                "pass --since ISO-TIME to catch up on earlier ones.",
                err=True,
            )
    click.get_current_context().exit(_exit_for(outcomes))


def _early_socket() -> socket.socket | None:
    """The receiver's socket, bound before the slow imports (``cli._Group``), if any."""
    from practiceflow.service.netaddr import EARLY_SOCKET

    return click.get_current_context().meta.pop(EARLY_SOCKET, None)  # type: ignore[no-any-return]


@click.command("serve")
@click.argument("recipes", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@practice_option
@click.option("--console/--no-console", "console_on", default=True, help="Serve the console.")
@click.option(
    "--console-listen",
    metavar="HOST:PORT",
    envvar="PRACTICEFLOW_CONSOLE_LISTEN",
    default="127.0.0.1:8470",
    show_default=True,
    help="Where the console listens; beyond loopback --console-token is required.",
)
@click.option("--console-token", envvar="PRACTICEFLOW_CONSOLE_TOKEN", help="Console token.")
@click.option(
    "--listen",
    metavar="HOST:PORT",
    envvar="PRACTICEFLOW_LISTEN",
    help="Where the webhook receiver listens (env PRACTICEFLOW_LISTEN; default a free port "
    "of 127.0.0.1). Fix it so that the API's retries reach a restarted serve.",
)
@click.option(
    "--public-url",
    metavar="URL",
    envvar="PRACTICEFLOW_PUBLIC_URL",
    help="The URL at which the API reaches the receiver (env PRACTICEFLOW_PUBLIC_URL); "
    "'local' for the receiver's own URL (the sandbox). Without it, mode: auto triggers poll.",
)
@_since_option
@click.option(
    "--unsubscribe-on-exit",
    is_flag=True,
    help="Remove the webhook subscriptions on a normal stop (off by default: they are kept, "
    "so deliveries made while serve is down reach it after a restart).",
)
@state_option
@modules_option
@log_json_option
@verbose_option
@api_options
def serve(
    recipes: tuple[str, ...],
    console_on: bool,
    console_listen: str,
    log_json: bool,
    verbose: bool,
    **options: Any,
) -> None:
    """Receive webhooks, poll, and run recipes until SIGTERM (the current step finishes, the
    rest of its run resumes on the next start), with the run console on
    http://127.0.0.1:8470/console/. On a stop, webhook subscriptions are kept (remove them
    with 'practiceflow triggers unsubscribe', or --unsubscribe-on-exit); on start, triggers
    with a poll source catch up, and each downtime of the others is listed as needing
    attention, as is a subscription in doubt (never repeated). A second serve on the same
    SQLite state file refuses to start. Webhooks need --public-url, and --listen for an
    address that survives restarts. See docs/deploy.md.

    \b
    Examples:
      practiceflow serve recipes/proposal_to_bill_and_eform.yaml --log-json
      practiceflow serve recipes/proposal_to_bill_and_eform.yaml \\
          --listen 127.0.0.1:8080 --public-url http://127.0.0.1:8080   # the sandbox
      practiceflow serve recipes/won_lead_to_client.yaml --since 2026-11-01T00:00:00Z
      practiceflow serve recipes/*.yaml --console-listen 0.0.0.0:8470 --console-token "$T"
    """
    configure_logging(json_lines=log_json, verbose=verbose)
    console = console_listen if console_on else None
    # The other options are serve_recipes' arguments by name.
    serve_recipes(recipes, console=console, listen_socket=_early_socket(), **options)


@click.group("runs")
def runs() -> None:
    """List, inspect, retry and resolve runs.

    \b
    Examples:
      practiceflow runs list --status in_doubt
      practiceflow runs resolve 5f0c... --step bill --as done --note "found INV-1042"
    """


for _command in (purge, resolve, cancel, run_recipe):
    runs.add_command(_command)


def _print_outcomes(outcomes: Sequence[RunOutcome]) -> None:
    """One line per run: a run id and an event id are never cut to fit a table."""
    for outcome in outcomes:
        held = f"  held at {', '.join(outcome.held)}" if outcome.held else ""
        if outcome.driven_elsewhere:
            held = f"  left to the process driving it ({outcome.driven_elsewhere})"
        click.echo(f"{outcome.status:<10} run {outcome.run_id}  event {outcome.event_id}{held}")


@runs.command("list")
@click.option("--recipe", help="Only this recipe's runs.")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs in this status.")
@click.option(
    "--limit",
    default=50,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="At most this many (newest first).",
)
@click.option("--version", "version", help="Only runs on this recipe version.")
@state_option
@json_option
def list_runs(
    recipe: str | None,
    status: Any,
    limit: int,
    version: str | None,
    state: str | None,
    as_json: bool,
) -> None:
    """List runs, newest first. --status in_doubt lists what needs a person, as the
    console's "Needs attention" does: runs held at a step in doubt, quarantined runs
    ('runs show' says why), then the open entries of 'attention list'.

    \b
    Examples:
      practiceflow runs list
      practiceflow runs list --status in_doubt --json
      practiceflow runs list --version 3f2a9c01b7de
    """
    with open_state(state) as store:
        found = store.list_runs(recipe=recipe, status=status, limit=limit, version=version)
        waiting = {record.run_id: needs_person(store, record) for record in found}
        entries = []
        if status == "in_doubt":  # a settled run waits for serve or 'runs retry', not a person
            found = [record for record in found if waiting[record.run_id]]
            entries = [] if recipe else store.list_attention(statuses=("open",))
        if as_json:
            rows = [
                {**run_json(record), "needs_attention": waiting[record.run_id]} for record in found
            ]
            click.echo(json.dumps(rows + [entry_json(entry) for entry in entries], indent=2))
            return
        console = terminal()
        cells: list[tuple[str, ...]] = []
        for record in found:
            steps = store.get_steps(record.run_id)
            done = sum(step.status in ("succeeded", "skipped") for step in steps)
            cells.append(
                (
                    record.run_id,
                    escape(record.recipe),
                    status_label(record, waiting[record.run_id]),
                    f"{done}/{len(steps)}",
                    short(record.version),
                    record.updated_at.strftime("%m-%d %H:%M"),
                )
            )
        for entry in entries:  # the run column holds the id 'attention settle' takes
            when = entry.updated_at.strftime("%m-%d %H:%M")
            row = (entry.attention_id, escape(label(entry)), "needs attention", "-", "-", when)
            cells.append(row)
        # The version goes first when the identifiers leave no room for it.
        table = runs_table(found, cells, with_version=True)
        if measure(console, table).minimum > console.width:
            table = runs_table(found, cells, with_version=False)
        # Narrower than the identifiers need, lines run past the edge rather than cut one.
        needed = measure(console, table)
        if needed.minimum > console.width:
            console = terminal(width=needed.maximum)
        console.print(table)


@runs.command("show")
@click.argument("run_id")
@state_option
@json_option
def show(run_id: str, state: str | None, as_json: bool) -> None:
    """Show a run and its step journal (requests masked; outputs as identifiers only).

    \b
    Examples:
      practiceflow runs show 5f0c...
      practiceflow runs show 5f0c... --json
    """
    with open_state(state) as store:
        record = run_or_fail(store, run_id)
        run_id = record.run_id
        steps = store.get_steps(run_id)
        if as_json:
            data = run_json(record)
            data["retry"] = retry_json(store.run_retry(run_id))
            data["steps"] = [
                {
                    "step": step.step_id,
                    "status": step.status,
                    "attempts": step.attempts,
                    "request": step.request,
                    "output": identifiers(step.output),
                    "error": step.error,
                    "resolved_by": step.resolved_by,
                    "resolution_note": step.resolution_note,
                    "history": [
                        {"from": move.from_status, "to": move.to_status, "at": move.at.isoformat()}
                        for move in store.step_history(run_id, step.step_id)
                    ],
                }
                for step in steps
            ]
            echo_json(data)
            return
        console = terminal()
        console.print(
            f"run [bold]{record.run_id}[/] of {record.recipe!r} (version "
            f"{short(record.version)}) for event {record.event_id}: [bold]{record.status}[/]"
        )
        # Step ids and statuses never wrap; a succeeded step's identifiers go one a line,
        # so that a key is never cut at 80 columns.
        table = Table(box=None, header_style="bold")
        for column in ("step", "status", "attempts"):
            table.add_column(column, no_wrap=True)
        table.add_column("detail", ratio=1, overflow="fold")
        for step in steps:
            text = detail(step)
            if step.status == "succeeded" and not step.resolved_by:
                text = text.replace(", ", "\n")
            table.add_row(step.step_id, step.status, str(step.attempts), escape(text))
        console.print(table)
        retried = retry_line(store.run_retry(run_id))
        if retried:
            console.print(escape(retried))
        reason = quarantine_reason(record)
        if reason is not None:
            console.print(escape(reason))
        elif record.status == "in_doubt":
            held = [step.step_id for step in steps if step.status == "in_doubt"]
            console.print(
                f"held for a person: check the practice's records, then "
                f"'practiceflow runs resolve {run_id} --step {held[0] if held else 'ID'} "
                "--as done|retry'"
            )


@runs.command("retry")
@click.argument("run_id")
@click.option("--recipe", "recipe_path", help="Recipe file (default: the run's).")
@state_option
@modules_option
@json_option
@api_options
def retry(
    run_id: str,
    recipe_path: str | None,
    state: str | None,
    modules_dirs: tuple[Path, ...],
    as_json: bool,
    api: ApiOptions,
) -> None:
    """Run a failed, settled or quarantined run again from its first unfinished step
    (failed steps are sent again; succeeded steps never are).

    \b
    Example:
      practiceflow runs retry 5f0c...
    """
    with open_state(state) as store:
        record = run_or_fail(store, run_id)
        run_id = record.run_id
        if record.origin is None and record.status in FINISHED:
            message = f"run {run_id}: its payloads were removed (runs purge); it cannot be retried"
            raise ConfigError(message)
        origin = record.origin if isinstance(record.origin, dict) else {}
        path = recipe_path or origin.get("recipe_file")
        if record.version and not recipe_path:  # the run's own version, whatever the file says
            with practice_client(api, state) as client:
                recipe = rebuild(load_version(store, record.version))
                runner = Runner(recipe, store, client, practice=record.practice)
                outcome = runner.resume_run(run_id, retry_failed=True)
        elif not path:
            message = f"run {run_id}: the recipe file is not known; pass --recipe FILE"
            raise ConfigError(message)
        else:
            with _connect(api, [path], modules_dirs, record.practice, state) as (client, found, _):
                runner = Runner(found[0], store, client, practice=record.practice)
                outcome = runner.resume_run(run_id, retry_failed=True)
        if outcome.driven_elsewhere:
            raise RunDrivenElsewhere(run_id, outcome.driven_elsewhere)
        if as_json:
            click.echo(json.dumps(asdict(outcome), default=str))
        else:
            _print_outcomes([outcome])
    click.get_current_context().exit(_exit_for([outcome]))


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


COMMANDS: list[click.Command] = [run, serve, runs, plan]


if __name__ == "__main__":  # the runner tests' entry: python -m practiceflow.cli.runs
    from practiceflow.cli import main

    main()
