"""The filters and clock of the template environment (used by :mod:`practiceflow.templating`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

from jinja2.runtime import Undefined

_clock: Callable[[], datetime] | None = None


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Replace the clock behind ``now`` (for tests); ``None`` restores the real UTC clock."""
    global _clock
    _clock = clock


def utcnow() -> datetime:
    """Return the current time in UTC, from the clock set by :func:`set_clock`."""
    return (_clock() if _clock is not None else datetime.now(UTC)).astimezone(UTC)


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, Undefined):
        value._fail_with_undefined_error()
    if isinstance(value, str) and value.strip().lower() == "now":
        return utcnow()
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            message = f"got {value!r}; expected an ISO 8601 date or datetime, or 'now'"
            raise ValueError(message) from None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    message = f"got {value!r}; expected a date, a datetime, an ISO 8601 string or 'now'"
    raise ValueError(message)


def filter_date(value: Any) -> str:
    """``{{ x | date }}``: a datetime (naive means UTC), date, ISO 8601 string or ``"now"``
    as the UTC calendar date ``YYYY-MM-DD``."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and len(value.strip()) == 10:  # a bare date has no zone
        return _as_datetime(value).date().isoformat()
    return _as_datetime(value).astimezone(UTC).date().isoformat()


def filter_datetime(value: Any) -> str:
    """``{{ x | datetime }}``: the same inputs as ``date`` as UTC ISO 8601 to the second,
    such as ``2024-05-01T09:30:00Z``."""
    moment = _as_datetime(value).astimezone(UTC).replace(microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def filter_tojson(value: Any, indent: int | None = None) -> str:
    """``{{ x | tojson }}``: plain JSON text (unlike Jinja's HTML-safe variant)."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def filter_pathseg(value: Any) -> str:
    """``{{ x | pathseg }}``: a value as one URL path segment (``/`` and every reserved
    character percent-encoded)."""
    return quote(str(value), safe="")
