"""``practiceflow runs purge``: remove the payloads of finished runs past retention
(``--older-than``, else ``PRACTICEFLOW_RETENTION``, which ``serve`` applies at start); and
the one reader of the durations and instants the commands take (``--since``)."""

from __future__ import annotations

import logging
import os
import re
from datetime import UTC, datetime, timedelta
from typing import Final

import click

from practiceflow.cli.state import open_state, state_option
from practiceflow.errors import ConfigError
from practiceflow.state import StateStore

RETENTION_ENV: Final = "PRACTICEFLOW_RETENTION"
_UNITS: Final = {"d": 86400, "h": 3600, "m": 60}
_SHAPE: Final = re.compile(r"\s*(\d{1,6})\s*([dhm])\s*", re.IGNORECASE)

_log = logging.getLogger(__name__)


def parse_retention(text: str, where: str) -> timedelta:
    """A retention such as ``30d``, ``12h`` or ``90m`` (``where`` names its source)."""
    match = _SHAPE.fullmatch(text)
    if match is None or int(match.group(1)) == 0:
        message = f"{where}: got {text!r}; expected a duration such as 30d, 12h or 90m"
        raise ConfigError(message)
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: an ISO 8601 date-time with its offset or, given ``now``, a duration back
    from it (``30d``, ``12h``, ``90m``)."""
    if now is not None and _SHAPE.fullmatch(text):
        return now - parse_retention(text, "--since")
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        durations = "a duration such as 30d, 12h or 90m, or " if now is not None else ""
        message = (
            f"--since: got {text!r}; expected {durations}an ISO 8601 date-time with an offset, "
            "such as 2026-11-01T00:00:00Z"
        )
        raise ConfigError(message)
    return moment


def check_since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The callback of an instant-only ``--since``: checked here, passed on as text."""
    if value is None:
        return None
    parse_since(value)
    return value.strip()


def purge_by_setting(store: StateStore) -> int | None:
    """Apply ``PRACTICEFLOW_RETENTION`` to ``store``: the runs purged (None: not set)."""
    text = os.environ.get(RETENTION_ENV)
    if not text:
        return None
    keep = parse_retention(text, RETENTION_ENV)
    purged = store.purge_payloads(datetime.now(UTC) - keep)
    _log.info("retention %s: payloads of %d finished runs removed", text.strip(), purged)
    return purged


@click.command("purge")
@click.option(
    "--older-than",
    "older_than",
    metavar="DURATION",
    envvar=RETENTION_ENV,
    help="Finished runs older than this (30d, 12h, 90m); env PRACTICEFLOW_RETENTION.",
)
@state_option
def purge(older_than: str | None, state: str | None) -> None:
    """Remove the payloads of finished runs older than DURATION.

    Runs stay listed with their status, ids and times; their trigger payloads, step
    requests and outputs are removed. Runs in doubt or still running keep everything.

    \b
    Examples:
      practiceflow runs purge --older-than 30d
      PRACTICEFLOW_RETENTION=90d practiceflow runs purge
    """
    if not older_than:
        message = f"runs purge: give --older-than DURATION (e.g. 30d) or set {RETENTION_ENV}"
        raise ConfigError(message)
    keep = parse_retention(older_than, "--older-than")
    with open_state(state) as store:
        purged = store.purge_payloads(datetime.now(UTC) - keep)
    click.echo(f"removed the payloads of {purged} finished run(s) older than {older_than}")
