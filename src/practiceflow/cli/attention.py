"""A person's side: ``practiceflow attention`` (what needs a person,
:mod:`practiceflow.service.needs_person`), ``runs resolve`` and ``runs cancel`` (decisions on
runs; an attention entry's id settles the entry), and ``audit completeness`` (the ledger of
:mod:`practiceflow.runner.ledger`, where the gaps come from)."""

from __future__ import annotations

import getpass
import json
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from practiceflow.cli.common import echo_json, json_option, terminal
from practiceflow.cli.retention import parse_since
from practiceflow.cli.state import open_state, run_or_fail, state_option
from practiceflow.errors import ConfigError
from practiceflow.runner.ledger import completeness
from practiceflow.service.needs_person import find_entry, label, settle, settle_command
from practiceflow.state import RunRecord, StateStore
from practiceflow.state.attention_rows import ATTENTION_KINDS, AttentionRecord
from practiceflow.state.runids import find_run


def entry_json(entry: AttentionRecord) -> dict[str, Any]:
    """An entry as JSON (the same keys as a run's where they mean the same)."""

    def iso(value: Any) -> str | None:
        return None if value is None else str(value.isoformat())

    return {
        "run_id": entry.attention_id,
        "id": entry.attention_id,
        "recipe": label(entry),
        "kind": entry.kind,
        "practice": entry.practice,
        "trigger": entry.trigger,
        "status": "in_doubt" if entry.status != "closed" else "closed",
        "attention_status": entry.status,
        "needs_attention": entry.needs_person,
        "window": [iso(entry.window_start), iso(entry.window_end)],
        "reason": entry.reason,
        "evidence": entry.evidence,
        "created_at": iso(entry.created_at),
        "updated_at": iso(entry.updated_at),
        "settled_by": entry.settled_by,
        "settled_at": iso(entry.settled_at),
        "note": entry.note,
        "settle": settle_command(entry) if entry.status == "open" else None,
    }


@click.group("attention")
def attention() -> None:
    """What needs a person: gaps in what was received that nobody could prove complete,
    webhook subscriptions in doubt, deliveries held without running. Runs held at a step in
    doubt are settled with 'runs resolve' ('runs list --status in_doubt' lists both).

    \b
    Examples:
      practiceflow attention list
      practiceflow attention list --all --json
      practiceflow attention settle 5f0c1a2b --note "checked the portal: nothing missing"
    """


@attention.command("list")
@click.option("--all", "show_all", is_flag=True, help="Also entries settled or being checked.")
@click.option("--kind", type=click.Choice(ATTENTION_KINDS), help="Only this kind.")
@json_option
@state_option
def list_entries(show_all: bool, kind: Any, as_json: bool, state: str | None) -> None:
    """List the entries that wait for a person, newest first (--all: every entry, with who
    settled it and how; a gap a sweep closed says what it read).

    \b
    Examples:
      practiceflow attention list
      practiceflow attention list --kind gap --all --json
    """
    with open_state(state) as store:
        found = store.list_attention(kind=kind, statuses=None if show_all else ("open",))
    if as_json:
        click.echo(json.dumps([entry_json(entry) for entry in found], indent=2))
        return
    if not found:
        click.echo("nothing needs attention" if not show_all else "no entries")
        return
    table = Table(title=f"attention ({len(found)})", box=None, header_style="bold")
    for name in ("id", "entry", "status", "reason"):
        table.add_column(name, no_wrap=name in ("id", "entry"))
    for entry in found:
        status = entry.status
        if entry.status == "closed":
            status = f"settled by {entry.settled_by}"
        table.add_row(entry.attention_id[:8], escape(label(entry)), status, escape(entry.reason))
    terminal().print(table)


@attention.command("settle")
@click.argument("entry_id")
@click.option("--note", required=True, help="What you checked or did (kept with the entry).")
@click.option("--who", help="Who decided (default: your user name).")
@state_option
def settle_entry(entry_id: str, note: str, who: str | None, state: str | None) -> None:
    """Settle an entry once you have checked the practice (and started by hand what was
    missing). Nothing is sent; the entry is kept, closed, with who and why.

    \b
    Example:
      practiceflow attention settle 5f0c1a2b --note "no form submitted in that window"
    """
    if not note.strip():
        raise ConfigError("--note: say what you checked (it is kept with the entry)")
    with open_state(state) as store:
        entry = find_entry(store, entry_id)
        if entry is None:
            message = f"no attention entry {entry_id!r} in the state store; see "
            message += "'practiceflow attention list'"
            raise ConfigError(message)
        settle(store, entry, who or getpass.getuser(), note)
    click.echo(f"{label(entry)} {entry.attention_id}: settled")


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
@json_option
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
        echo_json(body)
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


def _run_or_entry(store: StateStore, ident: str) -> RunRecord | AttentionRecord:
    """The run an id names, else the attention entry; else the usual 'no run' error."""
    if find_run(store, ident) is None:
        entry = find_entry(store, ident)
        if entry is not None:
            return entry
    return run_or_fail(store, ident)


def _check_step(store: StateStore, run: RunRecord, step_id: str) -> None:
    """Refuse a step the run does not have, or one with nothing to resolve (exit 2)."""
    steps = store.get_steps(run.run_id)
    listed = ", ".join(f"{step.step_id} ({step.status})" for step in steps) or "none yet"
    found = next((step for step in steps if step.step_id == step_id), None)
    if found is None:
        message = f"run {run.run_id} has no step {step_id!r}; its steps: {listed}"
        raise ConfigError(message)
    if found.status not in ("failed", "in_doubt"):
        message = (
            f"run {run.run_id} step {step_id!r} is {found.status}: only a failed or in_doubt "
            f"step can be resolved; its steps: {listed}"
        )
        raise ConfigError(message)


def _resolve_entry(entry: AttentionRecord, step_id: str, as_: str) -> None:
    """Refuse what means nothing for an attention entry (exit 2)."""
    if step_id != "gap":
        message = (
            f"{label(entry)} {entry.attention_id} is an attention entry, not a run: it has "
            f"one step, 'gap'; settle it with '{settle_command(entry)}'"
        )
        raise ConfigError(message)
    if as_ != "done":
        message = (
            f"{label(entry)} {entry.attention_id}: --as {as_} means nothing here (there is "
            "no request to send again); check the practice, start what is missing by hand, "
            f"then '{settle_command(entry)}'"
        )
        raise ConfigError(message)


@click.command("resolve")
@click.argument("run_id")
@click.option("--step", "step_id", required=True, help="The step in doubt (or failed).")
@click.option(
    "--as",
    "as_",
    type=click.Choice(["done", "retry"]),
    required=True,
    help="done: it happened (later steps continue); retry: it did not, send it again.",
)
@click.option("--note", default="", help="Why, in your words (kept in the journal).")
@click.option("--who", help="Who decided (default: your user name).")
@click.option("--output", "output_json", help="With done: the output, as JSON.")
@state_option
def resolve(
    run_id: str,
    step_id: str,
    as_: Any,
    note: str,
    who: str | None,
    output_json: str | None,
    state: str | None,
) -> None:
    """Settle a step held in doubt by a person's decision; the run then continues with
    'runs retry', or by itself under a running 'serve'. A step the run does not have, or
    not failed or in doubt, is refused (exit 2). An attention entry's id is settled by
    '--step gap --as done' (as 'attention settle' does); '--as retry' is refused for it.

    \b
    Example:
      practiceflow runs resolve 5f0c... --step form --as done --note "form seen in portal"
    """
    output = None
    if output_json is not None:
        try:
            output = json.loads(output_json)
        except (ValueError, RecursionError) as exc:  # absurd nesting recurses
            message = f"--output: got text that is not JSON ({exc}); expected a JSON object"
            raise ConfigError(message) from None
    with open_state(state) as store:
        record = _run_or_entry(store, run_id)
        if isinstance(record, AttentionRecord):
            _resolve_entry(record, step_id, as_)
            settle(store, record, who or getpass.getuser(), note or "resolved as done")
            click.echo(f"{label(record)} {record.attention_id}: settled ({as_}) and closed")
            return
        run_id = record.run_id
        _check_step(store, record, step_id)
        store.resolve_step(run_id, step_id, as_, who or getpass.getuser(), note, output=output)
        click.echo(
            f"step {step_id!r} of run {run_id} resolved as {as_}; a serve running on this "
            f"state continues it by itself, else continue it with "
            f"'practiceflow runs retry {run_id}'"
        )


@click.command("cancel")
@click.argument("run_id")
@click.option("--reason", required=True, help="Why, in your words (kept with the run).")
@click.option("--who", help="Who decided (default: your user name).")
@state_option
def cancel(run_id: str, reason: str, who: str | None, state: str | None) -> None:
    """Settle a run that needs attention without running it: a failed or held run a person
    gives up on (an attention entry's id settles the entry, as 'attention settle' does).
    Nothing is sent; the run is kept, cancelled, with who and why.

    \b
    Example:
      practiceflow runs cancel 5f0c... --reason "it was our own test delivery"
    """
    if not reason.strip():
        raise ConfigError("--reason: give a reason (it is kept with the run)")
    with open_state(state) as store:
        found = _run_or_entry(store, run_id)
        if isinstance(found, AttentionRecord):
            settle(store, found, who or getpass.getuser(), reason)
            click.echo(f"{label(found)} {found.attention_id}: settled ({reason})")
            return
        record = found
        run_id = record.run_id
        if record.status not in ("pending", "failed", "in_doubt"):
            message = (
                f"run {run_id} is {record.status}; only a pending, failed or in_doubt run "
                "can be cancelled"
            )
            raise ConfigError(message)
        decided = {
            "reason": reason,
            "cancelled_by": who or getpass.getuser(),
            "was": record.error if record.error is not None else record.status,
        }
        store.set_run_status(run_id, "cancelled", decided)
        click.echo(f"{record.recipe} {run_id}: cancelled ({reason})")


COMMANDS: list[click.Command] = [attention, audit]
