"""Query parameters shared by the list routes (spec section 8) and list envelopes."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from practiceflow.sandbox.clock import SandboxClock, parse_time
from practiceflow.sandbox.problems import ApiProblem

MAX_PAGE_NUMBER = 10_000
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


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
    """Parse ``lastUpdated`` (UTC ISO 8601); 400 when unparsable or in the future.

    Args:
        query: the query parameters.
        clock: the sandbox clock ("future" is relative to it).
        name: the parameter name.

    Returns:
        Unix seconds, or ``None`` when absent.

    Raises:
        ApiProblem: 400 for an unparsable or future value.
    """
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
    """Parse a boolean query parameter (``true``/``false``, ``1``/``0``).

    Raises:
        ApiProblem: 400 for any other value.
    """
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


def query_date(query: Mapping[str, str], name: str, required: bool = False) -> date | None:
    """Parse a date parameter (``YYYY-MM-DD``); an empty value is not a date.

    Args:
        query: the query parameters.
        name: the parameter name.
        required: whether an absent parameter is a 400 too.

    Returns:
        The date, or ``None`` when absent (and not required).

    Raises:
        ApiProblem: 400 for an empty or unparsable value, or a required one absent.
    """
    raw = query.get(name)
    if raw is None:
        if required:
            raise ApiProblem(400, f"{name} is required: a date YYYY-MM-DD")
        return None
    try:
        if not _DATE.fullmatch(raw):
            raise ValueError(raw)
        return date.fromisoformat(raw)
    except ValueError:
        raise ApiProblem(400, f"{name}: got {raw!r}; expected a date YYYY-MM-DD") from None


def query_uuid(query: Mapping[str, str], name: str, required: bool = False) -> str | None:
    """Parse a uuid parameter (its canonical text); an empty value is not a uuid.

    Args:
        query: the query parameters.
        name: the parameter name.
        required: whether an absent parameter is a 400 too.

    Returns:
        The uuid in canonical form, or ``None`` when absent (and not required).

    Raises:
        ApiProblem: 400 for an empty or unparsable value, or a required one absent.
    """
    raw = query.get(name)
    if raw is None:
        if required:
            raise ApiProblem(400, f"{name} is required: a uuid")
        return None
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise ApiProblem(400, f"{name}: got {raw!r}; expected a uuid") from None


def envelope(rows: Sequence[Any], number: int, size: int) -> dict[str, Any]:
    """The guessed envelope of ``pageSize`` lists: one page of ``rows`` plus ``hasMore``.

    Args:
        rows: every matching row, in order.
        number: the 1-based page.
        size: rows per page.

    Returns:
        ``items``, ``pageNumber``, ``pageSize``, ``totalCount`` and ``hasMore``.
    """
    start = (number - 1) * size
    items = list(rows[start : start + size])
    return {
        "items": items,
        "pageNumber": number,
        "pageSize": size,
        "totalCount": len(rows),
        "hasMore": start + size < len(rows),
    }
