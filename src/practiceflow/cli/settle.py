"""``practiceflow runs resolve`` and ``runs cancel``: a person's decisions on runs that need
attention; an attention entry's id is taken too (``resolve --as done`` and ``cancel``
settle it)."""

from __future__ import annotations

import getpass
import json
from typing import Any

import click

from practiceflow.cli.state import open_state, run_or_fail, state_option
from practiceflow.errors import ConfigError
from practiceflow.service.needs_person import find_entry, label, settle, settle_command
from practiceflow.state import RunRecord, StateStore
from practiceflow.state.attention_rows import AttentionRecord
from practiceflow.state.runids import find_run


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
    'runs retry', or by itself within seconds under a running 'serve'. A step that the run
    does not have, or that is not failed or in doubt, is refused (exit 2) with the run's
    steps. An attention entry's id ('attention list') is settled by '--step gap --as done'
    ('attention settle' says it better); '--as retry' means nothing for it and is refused.

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
