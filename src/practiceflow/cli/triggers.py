"""``practiceflow triggers``: list, subscribe, unsubscribe, check and poll triggers, on the
state store and practice key every command uses (:mod:`practiceflow.cli.state`), so that
``serve`` carries on from a cursor ``triggers poll`` moved. Secrets are never printed."""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from practiceflow.api import Client
from practiceflow.cli.common import ApiOptions, api_options, build_client, json_option
from practiceflow.cli.retention import check_since
from practiceflow.cli.state import open_state, practice_key, practice_option, state_option
from practiceflow.service.needs_person import close_subscription_doubt
from practiceflow.state import StateStore
from practiceflow.triggers import (
    Poller,
    SubscriptionManager,
    load_definition,
    shipped_trigger_keys,
    supported_events,
)
from practiceflow.triggers.downtime import has_poll_source


def _emit(data: Any, as_json: bool, human: str) -> None:
    click.echo(json.dumps(data, indent=2, default=str) if as_json else human)


@contextmanager
def _practice(
    api: ApiOptions, state: str | None, practice: str | None
) -> Iterator[tuple[Client, StateStore, str]]:
    """The client, the store and the practice key a trigger command works on."""
    with build_client(api) as client, open_state(state) as store:
        yield client, store, practice_key(practice, client.settings.client_id)


@click.group()
def triggers() -> None:
    """Webhook and polling triggers.

    \b
    Examples:
      practiceflow triggers list
      practiceflow triggers subscribe proposal_accepted --public-url https://hooks.example.com
    """


@triggers.command("list")
@json_option
def list_triggers(as_json: bool) -> None:
    """List the shipped triggers and how each can be received.

    A trigger marked (*) has no poll source: what happens while serve is down depends on
    the sender's retries (each downtime is listed as needing attention).

    \b
    Example:
      practiceflow triggers list --json
    """
    rows, lines = [], []
    for key in shipped_trigger_keys():
        found = load_definition(key)
        ways = [name for name, part in (("webhook", found.webhook), ("poll", found.poll)) if part]
        catch_up = found.webhook is None or has_poll_source(found, {})
        rows.append(
            {
                "key": key,
                "title": found.module.title,
                "receive": ways,
                "downtime": "caught up by polling" if catch_up else "sender retries only",
            }
        )
        mark = "" if catch_up else "  (*)"
        lines.append(f"{key:<28} {'+'.join(ways):<13} {found.module.title}{mark}")
    lines.append(
        "(*) no poll source (without options): events while serve is down depend on the "
        "sender's retries; each downtime is listed as needing attention"
    )
    _emit(rows, as_json, "\n".join(lines))


@triggers.command("subscribe")
@click.argument("trigger")
@click.option(
    "--public-url",
    envvar="PRACTICEFLOW_PUBLIC_URL",
    required=True,
    help="Base URL the API can reach the receiver at (env PRACTICEFLOW_PUBLIC_URL).",
)
@click.option("--event", "event_option", help="Event key, for any_webhook_event.")
@api_options
@state_option
@practice_option
@json_option
def subscribe(
    trigger: str,
    public_url: str,
    event_option: str | None,
    api: ApiOptions,
    state: str | None,
    practice: str | None,
    as_json: bool,
) -> None:
    """Subscribe a webhook trigger (POST /api/v1/webhooks); the secret stays in the store.

    \b
    Example:
      practiceflow triggers subscribe proposal_accepted --public-url https://hooks.example.com
    """
    found = load_definition(trigger)
    if found.webhook is None:
        raise click.UsageError(f"trigger {trigger!r} has no webhook; poll it instead")
    options = {"event": event_option} if event_option else {}
    event = found.webhook.event_key(options)
    with _practice(api, state, practice) as (client, store, key):
        offered = supported_events(client)
        if offered and event not in offered:
            raise click.UsageError(f"event {event!r} is not offered; valid values are {offered}")
        record = SubscriptionManager(client, store, key, public_url).ensure(found.key, event)
    data = {"trigger": found.key, "event": event, "id": record.subscription_id, "url": record.url}
    _emit(data, as_json, f"subscribed {found.key} to {event} (id {record.subscription_id})")


@triggers.command("unsubscribe")
@click.argument("trigger")
@click.option(
    "--forget",
    is_flag=True,
    help="Only forget the stored subscription, sending nothing: for one in doubt, after "
    "checking the practice's webhook settings by hand.",
)
@api_options
@state_option
@practice_option
def unsubscribe(
    trigger: str, forget: bool, api: ApiOptions, state: str | None, practice: str | None
) -> None:
    """Unsubscribe a trigger (DELETE /api/v1/webhooks/{id}) and forget it.

    A subscription in doubt (its subscribe got no answer) may exist on the server under an
    id nobody knows, so serve never repeats it and lists it as needing attention. To settle
    it: check the practice's webhook settings (delete a subscription found there), run this
    with --forget, which closes that entry, and restart: it subscribes again (docs/deploy.md).

    \b
    Examples:
      practiceflow triggers unsubscribe proposal_accepted
      practiceflow triggers unsubscribe proposal_accepted --forget   # one in doubt
    """
    with _practice(api, state, practice) as (client, store, key):
        removed = SubscriptionManager(client, store, key).remove(trigger, forget_only=forget)
        note = "forgotten (triggers unsubscribe --forget)" if forget else "unsubscribed"
        closed = close_subscription_doubt(store, key, trigger, getpass.getuser(), note)
    if not removed:
        click.echo(f"{trigger} was not subscribed")
    else:
        click.echo(f"forgot {trigger}'s subscription" if forget else f"unsubscribed {trigger}")
    for entry_id in closed:
        click.echo(
            f"closed subscription in doubt: {trigger} (entry {entry_id}); restart to "
            "subscribe again"
        )


@triggers.command("check")
@click.argument("trigger")
@click.option("--wait", default=5.0, show_default=True, help="Seconds to wait for the delivery.")
@api_options
@state_option
@practice_option
@json_option
def check(
    trigger: str,
    wait: float,
    api: ApiOptions,
    state: str | None,
    practice: str | None,
    as_json: bool,
) -> None:
    """Send the test delivery and report whether it reached the receiver.

    The receiver (the runner) must be running and share the state store: arrival is a new
    event of the trigger in the store. Exit code 1 when it did not arrive.

    \b
    Example:
      practiceflow triggers check proposal_accepted --wait 10
    """
    with _practice(api, state, practice) as (client, store, key):
        started = store.now()

        def arrived() -> bool:
            events = store.pending_events(key, 1000, source=trigger)
            return any(event.received_at >= started for event in events)

        result = SubscriptionManager(client, store, key).check(trigger, arrived, wait=wait)
    data = {
        "trigger": trigger,
        "status": result.status,
        "id": result.subscription_id,
        "waited": round(result.waited, 3),
    }
    _emit(data, as_json, f"{trigger}: {result.status} after {result.waited:.1f}s")
    if result.status != "arrived":
        raise SystemExit(1)


@triggers.command("poll")
@click.argument("trigger")
@click.option(
    "--once",
    is_flag=True,
    help="Poll once and exit (what this command always does; 'serve' polls continuously).",
)
@click.option("--with", "with_", multiple=True, metavar="NAME=VALUE", help="A trigger option.")
@click.option("--since", callback=check_since, help="Start here (ISO 8601) instead of from now.")
@api_options
@state_option
@practice_option
@json_option
def poll(
    trigger: str,
    once: bool,
    with_: tuple[str, ...],
    since: str | None,
    api: ApiOptions,
    state: str | None,
    practice: str | None,
    as_json: bool,
) -> None:
    """Poll a trigger once: store new events, move its cursor, print what was found.

    \b
    Example:
      practiceflow triggers poll new_client --once
      practiceflow triggers poll proposal_accepted --once --with entityKey=<uuid>
    """
    del once
    options = dict(item.split("=", 1) for item in with_ if "=" in item)
    started = time.monotonic()
    with _practice(api, state, practice) as (client, store, key):
        found = Poller(client, store, key, load_definition(trigger), options, since=since)
        result = found.poll_once()
    data = {
        "trigger": trigger,
        "baseline": result.baseline,
        "requests": result.requests,
        "cursor": result.cursor,
        "events": [{"id": event.id, "payload": event.payload} for event in result.events],
        "seconds": round(time.monotonic() - started, 3),
    }
    human = (
        f"{trigger}: {len(result.events)} new event(s), {result.requests} request(s), "
        f"cursor {result.cursor}" + (" (first poll: nothing fires)" if result.baseline else "")
    )
    _emit(data, as_json, human)


COMMANDS: list[click.Command] = [triggers]
