"""``practiceflow audit completeness``: the completeness ledger
(:mod:`practiceflow.runner.ledger`)."""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.table import Table

from practiceflow.cli.common import terminal
from practiceflow.cli.retention import parse_since
from practiceflow.cli.state import open_state, state_option
from practiceflow.runner.ledger import completeness


@click.group("audit")
def audit() -> None:
    """Check what practiceflow received and ran against what it should have.

    \b
    Example:
      practiceflow audit completeness --since 7d
    """


@audit.command("completeness")
@click.option(
    "--since",
    default="7d",
    show_default=True,
    help="From when: a duration back from now (30d, 12h, 90m) or an ISO 8601 instant.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@state_option
def completeness_command(since: str, as_json: bool, state: str | None) -> None:
    """Per practice and trigger: events seen, received by webhook, polled, recovered by a
    sweep after a downtime, ran; the ones that did not run; and every window nobody was
    listening, with the evidence that proved it complete (the lists read, over which
    window) or why it could not be ('missing': open for a person, or still checked).

    \b
    Examples:
      practiceflow audit completeness
      practiceflow audit completeness --since 2026-11-01T00:00:00Z --json
    """
    with open_state(state) as store:
        start = parse_since(since, store.now())
        ledger = completeness(store, start)
    if as_json:
        body = {"since": start.isoformat(), "triggers": [row.as_json() for row in ledger]}
        click.echo(json.dumps(body, indent=2, default=str))
        return
    title = f"completeness since {start.isoformat(timespec='seconds')}"
    table = Table(title=title, box=None, header_style="bold")
    for name in ("practice", "trigger", "seen", "webhook", "poll", "sweep", "ran", "not ran"):
        table.add_column(name, no_wrap=True)
    table.add_column("missing windows", no_wrap=True)
    for row in ledger:
        table.add_row(
            escape(row.practice),
            escape(row.trigger),
            *map(str, (row.seen, row.received, row.polled, row.recovered, row.ran)),
            str(len(row.not_ran)),
            str(row.missing),
        )
    console = terminal()
    console.print(table)
    for row in ledger:
        for gap in row.gaps:
            start_at, end_at = gap["window"]
            how = f"closed by {gap['settled_by']}" if gap["status"] == "closed" else gap["status"]
            why = escape(str(gap["why"]))
            line = f"{escape(row.trigger)} down {start_at}..{end_at}: {how}: {why}"
            console.print(line, soft_wrap=True)


COMMANDS: list[click.Command] = [audit]
