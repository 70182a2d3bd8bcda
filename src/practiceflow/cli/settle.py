"""``practiceflow runs resolve`` and ``runs cancel``: a person's decisions on runs that need
attention (a step in doubt, a gap entry, a delivery held as unrecognised)."""

from __future__ import annotations

import getpass
import json
from typing import Any

import click

from practiceflow.cli.state import open_state, run_or_fail, state_option
from practiceflow.errors import ConfigError
from practiceflow.runner.gaps import close_settled_gaps, is_attention_entry

__all__ = ["cancel", "resolve"]


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
@click.option("--who", default=None, help="Who decided (default: your user name).")
@click.option("--output", "output_json", default=None, help="With done: the output, as JSON.")
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
    'runs retry', or by itself within seconds under a running 'serve'. A gap entry or a
    'subscription in doubt' entry (step 'gap') is closed once settled.

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
        record = run_or_fail(store, run_id)
        run_id = record.run_id
        store.resolve_step(run_id, step_id, as_, who or getpass.getuser(), note, output=output)
        if is_attention_entry(record.recipe):
            close_settled_gaps(store, record.practice)
            click.echo(f"{record.recipe} {run_id}: settled ({as_}) and closed")
            return
        click.echo(
            f"step {step_id!r} of run {run_id} resolved as {as_}; a serve running on this "
            f"state continues it by itself, else continue it with "
            f"'practiceflow runs retry {run_id}'"
        )


@click.command("cancel")
@click.argument("run_id")
@click.option("--reason", required=True, help="Why, in your words (kept with the run).")
@click.option("--who", default=None, help="Who decided (default: your user name).")
@state_option
def cancel(run_id: str, reason: str, who: str | None, state: str | None) -> None:
    """Settle a run that needs attention without running it: a delivery held as
    'unrecognised:<trigger>', a gap entry, or a failed or held run a person gives up on.
    Nothing is sent; the run is kept, cancelled, with who and why.

    \b
    Example:
      practiceflow runs cancel 5f0c... --reason "it was our own test delivery"
    """
    if not reason.strip():
        raise ConfigError("--reason: give a reason (it is kept with the run)")
    with open_state(state) as store:
        record = run_or_fail(store, run_id)
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
