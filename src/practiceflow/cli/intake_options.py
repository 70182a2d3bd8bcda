"""Options of ``serve`` and ``run`` for the triggers' side, and serve's start-up lines.

``--public-url``, ``--listen`` and ``--since`` win over ``PRACTICEFLOW_PUBLIC_URL`` and
``PRACTICEFLOW_LISTEN``; :func:`announce` prints where the receiver listens and every URL
subscribed, with the secret path token that routes deliveries masked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click

from practiceflow.runner import ValidRecipe
from practiceflow.service.intake import TriggerIntake, build_intake
from practiceflow.state import StateStore

__all__ = ["IntakeOptions", "announce", "build_cli_intake", "since_option"]


@dataclass(frozen=True)
class IntakeOptions:
    """``--public-url``, ``--listen`` and ``--since`` (None: the environment's or none).

    Attributes:
        public_url: where the API delivers webhooks (``local``: the receiver's own URL).
        listen: the receiver's ``host:port``.
        since: where triggers without a cursor start polling (ISO 8601).
    """

    public_url: str | None = None
    listen: str | None = None
    since: str | None = None


def _mask_hook(url: str) -> str:
    """A subscribed URL with its unguessable path token masked (it routes deliveries)."""
    head, marker, _ = url.partition("/hooks/")
    return f"{head}{marker}***" if marker else url


def announce(intake: TriggerIntake, reused: Collection[str] = ()) -> None:
    """Print where the receiver listens and every URL subscribed (tokens masked).

    Args:
        intake: the started intake.
        reused: the ids of the subscriptions that existed before it started (kept from an
            earlier run: "reusing subscription"; any other was made now: "subscribed").
    """
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
            click.echo(
                f"trigger {key}: {trigger.mode}, {how} {row.event} at "
                f"{_mask_hook(row.url)} ({row.status})",
                err=True,
            )
        else:
            click.echo(f"trigger {key}: {trigger.mode}", err=True)


def build_cli_intake(
    recipes: Sequence[ValidRecipe],
    store: StateStore,
    client: Any,
    practice: str,
    options: IntakeOptions,
    *,
    unsubscribe: bool = False,
) -> TriggerIntake:
    """The triggers' receiver and pollers (arguments over the environment).

    Args:
        recipes: the checked recipes.
        store: the state store.
        client: the API client.
        practice: the practice key.
        options: what the command line said.
        unsubscribe: remove the subscriptions on a clean stop (``--unsubscribe-on-exit``).

    Returns:
        The intake (not started); it announces itself once started.
    """
    return build_intake(
        recipes,
        store,
        client,
        practice,
        public_url=options.public_url,
        listen=options.listen,
        since=options.since,
        on_started=announce,
        unsubscribe=unsubscribe,
    )


def _check_since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    del ctx, param
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        message = f"got {value!r}; expected an ISO 8601 date-time with an offset, such as "
        raise click.BadParameter(message + "2026-11-01T00:00:00Z")
    return value.strip()


since_option = click.option(
    "--since",
    metavar="ISO",
    default=None,
    callback=_check_since,
    help="Triggers polled for the first time start here (ISO 8601, such as "
    "2026-11-01T00:00:00Z) instead of 'from now', so earlier changes fire too.",
)
