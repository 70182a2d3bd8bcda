"""Query parameters as the API wants them: UTC timestamps, lower-case booleans.

A naive or future ``lastUpdated`` is refused before anything is sent: the API answers a
future one with 400, and a naive one would be read in an unknown zone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any, Final

from practiceflow.errors import ConfigError

LAST_UPDATED: Final = "lastUpdated"
_WIRE_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


def to_utc_param(
    value: datetime | str | object,
    *,
    name: str = LAST_UPDATED,
    allow_future: bool = False,
    now: Callable[[], datetime] = utc_now,
) -> str:
    """Turn an aware datetime (or ISO 8601 text with an offset) into ``YYYY-MM-DDTHH:MM:SSZ``.

    Fractions of a second are dropped, which moves the instant earlier: for an "at or
    after" filter such as ``lastUpdated`` that can only include more records, never miss one.

    Args:
        value: an aware datetime, or text such as ``2026-11-22T20:00:00+10:00``.
        name: the parameter's name, for error messages.
        allow_future: accept instants after now (``lastUpdated`` must not be in the future).
        now: the current time.

    Returns:
        The instant in UTC, e.g. ``2026-11-22T10:00:00Z``.

    Raises:
        ConfigError: the value is not a datetime or ISO 8601 text, has no UTC offset, or
            lies in the future.
    """
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            message = (
                f"{name}: got {value!r}; expected an ISO 8601 date-time with a UTC offset, "
                "such as '2026-11-22T10:00:00Z' or '2026-11-22T20:00:00+10:00'"
            )
            raise ConfigError(message) from None
    elif isinstance(value, datetime):
        moment = value
    else:
        message = (
            f"{name}: got {type(value).__name__} {value!r}; expected an aware datetime or "
            "ISO 8601 text with a UTC offset"
        )
        raise ConfigError(message)
    if moment.tzinfo is None or moment.utcoffset() is None:
        message = (
            f"{name}: got {value!r} without a time zone; give an aware datetime (e.g. "
            "datetime(..., tzinfo=UTC)) or text with an offset such as '...Z' or '+10:00'"
        )
        raise ConfigError(message)
    utc = moment.astimezone(UTC)
    current = now()
    if not allow_future and utc > current:
        message = (
            f"{name}: got {utc.strftime(_WIRE_FORMAT)}, which is in the future (now is "
            f"{current.astimezone(UTC).strftime(_WIRE_FORMAT)}); the API refuses it with 400"
        )
        raise ConfigError(message)
    return utc.strftime(_WIRE_FORMAT)


def encode_params(
    params: Mapping[str, Any] | None, *, now: Callable[[], datetime] = utc_now
) -> dict[str, Any]:
    """A query mapping as wire values: ``None`` dropped, booleans ``true``/``false``, datetimes
    aware UTC text (``lastUpdated`` never in the future), dates ``YYYY-MM-DD``, lists kept."""
    encoded: dict[str, Any] = {}
    for key, value in (params or {}).items():
        if value is None:
            continue
        if key == LAST_UPDATED:
            encoded[key] = to_utc_param(value, name=key, now=now)
        elif isinstance(value, bool):
            encoded[key] = "true" if value else "false"
        elif isinstance(value, datetime):
            encoded[key] = to_utc_param(value, name=key, allow_future=True, now=now)
        elif isinstance(value, date):
            encoded[key] = value.isoformat()
        else:
            encoded[key] = value
    return encoded
