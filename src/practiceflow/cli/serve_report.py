"""What ``serve`` tells at the default log level, on stderr: what it did, not how.

At start the receiver and each trigger (every subscribed URL with its secret path token
masked), and what the catch-up after a downtime brought; one line per run; what a sweep
of a downtime found; at the end whether the subscriptions were kept. Ids, recipe names
and statuses only: nothing personal or secret.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta

import click

from practiceflow.runner import RunOutcome
from practiceflow.service.intake import TriggerIntake
from practiceflow.service.sweep import SweepResult
from practiceflow.state import StateStore


def announce(intake: TriggerIntake, reused: Collection[str] = ()) -> None:
    """Print where the receiver listens and every URL subscribed (``reused``: the ids of
    the subscriptions kept from an earlier start)."""
    if intake.server is not None:
        click.echo(f"webhook receiver listening on {intake.server.url}", err=True)
    else:
        click.echo(
            "no webhook receiver (no --public-url / PRACTICEFLOW_PUBLIC_URL): triggers poll",
            err=True,
        )
    subscribed = {row.trigger_key: row for row in intake.store.list_subscriptions(intake.practice)}
    for key, trigger in intake.triggers.items():
        row = subscribed.get(key)
        if key in intake.in_doubt:
            meanwhile = "polled meanwhile" if intake.in_doubt[key] else "its events NOT received"
            click.echo(
                f"trigger {key}: {trigger.mode}, subscription IN DOUBT, not repeated: "
                f"{meanwhile}; see 'practiceflow attention list'",
                err=True,
            )
        elif row is not None and trigger.mode in ("webhook", "both"):
            how = (
                f"reusing subscription {row.subscription_id} of"
                if row.subscription_id in reused
                else "subscribed"
            )
            # The URL's path token routes deliveries: it is a secret.
            head, marker, _ = row.url.partition("/hooks/")
            url = f"{head}{marker}***" if marker else row.url
            click.echo(
                f"trigger {key}: {trigger.mode}, {how} {row.event} at {url} ({row.status})",
                err=True,
            )
        else:
            click.echo(f"trigger {key}: {trigger.mode}", err=True)


def duration(span: timedelta) -> str:
    """A span as people say it (``2 h 5 min``, ``42 s``)."""
    seconds = max(0, int(span.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"


class ServeReport:
    """The lines ``serve`` prints about itself; ``down_since`` is the last sign of life
    before this start (None: a first start)."""

    def __init__(
        self, store: StateStore, practice: str, down_since: datetime | None, *, unsubscribe: bool
    ) -> None:
        self.store = store
        self.practice = practice
        self.down_since = down_since
        self.back = store.now()
        self.unsubscribe = unsubscribe
        self.kept = {
            row.subscription_id
            for row in store.list_subscriptions(practice)
            if row.status == "active" and row.subscription_id
        }

    def started(self, intake: TriggerIntake) -> None:
        """The intake's ``on_started``: announce it, then what the catch-up brought."""
        announce(intake, frozenset(str(key) for key in self.kept))
        if self.down_since is None:
            return
        waiting = len(self.store.pending_events(self.practice, limit=100_000))
        click.echo(
            f"caught up {waiting} event(s) after a downtime of "
            f"{duration(self.back - self.down_since)}",
            err=True,
        )

    def outcome(self, outcome: RunOutcome) -> None:
        """One line per run: event, recipe, result."""
        run = self.store.get_run(outcome.run_id)
        recipe = run.recipe if run is not None else "?"
        held = f" at {', '.join(outcome.held)}" if outcome.held else ""
        click.echo(
            f"run {outcome.run_id[:8]} {recipe} event {outcome.event_id}: {outcome.status}{held}",
            err=True,
        )

    def swept(self, result: SweepResult) -> None:
        """What a sweep of a downtime found."""
        if result.closed:
            click.echo(
                f"gap of {result.trigger} closed by evidence: {result.found} event(s) in the "
                f"window, {len(result.recovered)} recovered by the sweep, none missing",
                err=True,
            )
        else:
            click.echo(
                f"gap of {result.trigger} could not be proven complete: needs attention "
                "(practiceflow attention list)",
                err=True,
            )

    def stopped(self) -> None:
        """The last line."""
        if self.unsubscribe:
            click.echo("serve: stopped; subscriptions removed (--unsubscribe-on-exit)", err=True)
        else:
            click.echo(
                "serve: stopped; subscriptions kept (the sender's retries reach the next start;"
                " remove them with 'practiceflow triggers unsubscribe')",
                err=True,
            )
