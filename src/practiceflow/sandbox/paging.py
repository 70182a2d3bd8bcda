"""Query parameters shared by the list routes (spec section 8) and list envelopes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any, TypeVar

from practiceflow.sandbox.clock import SandboxClock, parse_time
from practiceflow.sandbox.problems import ApiProblem

MAX_PAGE_NUMBER = 10_000
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
T = TypeVar("T")


def _integer(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        detail = f"{name}: got {raw!r}; expected an integer from {low} to {high}"
        raise ApiProblem(400, detail) from None
    if not low <= value <= high:
        detail = f"{name}: got {value}; expected an integer from {low} to {high}"
        raise ApiProblem(400, detail)
    return value


def page_number(query: Mapping[str, str]) -> int:
    """``pageNumber``: 1-based, default 1, at most 10000 (400 otherwise)."""
    return _integer(query, "pageNumber", 1, 1, MAX_PAGE_NUMBER)


def page_size(query: Mapping[str, str]) -> int:
    """``pageSize`` where supported: default 50, 1 to 100 (400 otherwise)."""
    return _integer(query, "pageSize", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)


def since(query: Mapping[str, str], clock: SandboxClock, name: str = "lastUpdated") -> float | None:
    """``lastUpdated`` (UTC ISO 8601) as Unix seconds, if given; 400 when unparsable or
    after the sandbox clock's now."""
    raw = query.get(name)
    if raw is None:
        return None
    try:
        value = parse_time(raw)
    except (ValueError, OverflowError):
        detail = f"{name}: got {raw!r}; expected a UTC ISO 8601 datetime"
        raise ApiProblem(400, detail) from None
    if value > clock.now():
        detail = f"{name}: got {raw!r}, which is in the future; it must not be after now"
        raise ApiProblem(400, detail)
    return value


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """A boolean query parameter (``true``/``false``, ``1``/``0``); 400 for any other value."""
    raw = query.get(name)
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    detail = f"{name}: got {raw!r}; expected true or false"
    raise ApiProblem(400, detail)


def _parsed(
    query: Mapping[str, str], name: str, required: bool, parse: Callable[[str], T], what: str
) -> T | None:
    raw = query.get(name)
    if raw is None:
        if required:
            raise ApiProblem(400, f"{name} is required: {what}")
        return None
    try:
        return parse(raw)
    except ValueError:
        raise ApiProblem(400, f"{name}: got {raw!r}; expected {what}") from None


def _date(raw: str) -> date:
    if not _DATE.fullmatch(raw):
        raise ValueError(raw)
    return date.fromisoformat(raw)


def query_date(query: Mapping[str, str], name: str, required: bool = False) -> date | None:
    """A date parameter (``YYYY-MM-DD``; an empty value is not one), 400 when bad."""
    return _parsed(query, name, required, _date, "a date YYYY-MM-DD")


def query_uuid(query: Mapping[str, str], name: str, required: bool = False) -> str | None:
    """A uuid parameter in canonical form (an empty value is not one), 400 when bad."""
    return _parsed(query, name, required, lambda raw: str(uuid.UUID(raw)), "a uuid")


def envelope(rows: Sequence[Any], number: int, size: int) -> dict[str, Any]:
    """The guessed envelope of ``pageSize`` lists: page ``number`` of ``rows`` plus
    ``pageNumber``, ``pageSize``, ``totalCount`` and ``hasMore``."""
    start = (number - 1) * size
    items = list(rows[start : start + size])
    return {
        "items": items,
        "pageNumber": number,
        "pageSize": size,
        "totalCount": len(rows),
        "hasMore": start + size < len(rows),
    }
