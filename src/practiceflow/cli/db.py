"""``practiceflow db``: create and upgrade the state database (SQLite or PostgreSQL, with
the fleet's job queue on PostgreSQL)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click

from practiceflow.cli.state import state_option
from practiceflow.service.state_location import state_target


def _sqlite_version(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path) as raw:
            row = raw.execute("SELECT version FROM schema_version").fetchone()
    except sqlite3.Error:  # no schema_version table yet: an empty database
        return 0
    return 0 if row is None else int(row[0])


def migrate_state(url: str, *, queue: bool = True) -> dict[str, object]:
    """Create or upgrade the store's schema (and on PostgreSQL the job queue's, with ``queue``);
    ``store``, ``before``, ``after``, ``queue``. A newer schema: a ConfigError, left untouched."""
    if url.lower().startswith(("postgresql://", "postgres://")):
        from practiceflow.state import describe_url, migrate

        done = migrate(url)
        report: dict[str, object] = {"store": describe_url(url), "queue": "skipped"}
        report.update(before=done.before, after=done.after)
        if queue:
            from practiceflow.fleet.queue import install_queue_schema

            report["queue"] = "installed" if install_queue_schema(url) else "present"
        return report
    from practiceflow.state import SQLiteStore, sqlite_path

    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    before = _sqlite_version(path)
    with SQLiteStore(path) as store:
        after = store.schema_version
    return {"store": str(path), "before": before, "after": after}


@click.group()
def db() -> None:
    """Create or upgrade the state database.

    \b
    Example:
      practiceflow db migrate --state postgresql://pf:secret@db:5432/practiceflow
    """


@db.command("migrate")
@state_option
@click.option(
    "--queue/--no-queue",
    default=True,
    help="On PostgreSQL, also install the fleet's job queue (procrastinate) when missing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def migrate_command(state: str | None, queue: bool, as_json: bool) -> None:
    """Create the schema, or upgrade it to this practiceflow's version.

    Safe to run again (nothing to do is not an error) and from several replicas at once
    (PostgreSQL serializes them). A database written by a newer practiceflow is refused
    and left untouched (exit code 2). Stop replicas of an older version before upgrading
    a shared database: they refuse to start against an older schema, and would misread
    a newer one.

    \b
    Examples:
      practiceflow db migrate
      PRACTICEFLOW_STATE=postgresql://pf@127.0.0.1/pf practiceflow db migrate --json
    """
    url = state_target(state)
    report = migrate_state(url, queue=queue)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True))
        return
    before, after = report["before"], report["after"]
    if before == after:
        line = f"{report['store']}: schema version {after}, up to date"
    elif before == 0:
        line = f"{report['store']}: schema created at version {after}"
    else:
        line = f"{report['store']}: schema upgraded from version {before} to {after}"
    click.echo(line)
    if "queue" in report:
        click.echo(f"job queue: {report['queue']}")


COMMANDS: list[click.Command] = [db]
