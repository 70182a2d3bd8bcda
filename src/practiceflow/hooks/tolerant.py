"""Readers for response shapes the spec leaves "not shown" (settings lists, ledger status
and tax rates, timestamps): they accept the plausible shapes and return None or an empty
list when they cannot tell, letting the caller warn instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

_WRAPPERS = ("items", "data", "results", "value", "values", "rows", "list")
_NAME_KEYS = ("name", "displayname", "title", "label")
_RATE_KEYS = ("rate", "taxrate", "effectiverate", "percentage", "percent", "taxpercent")
_SELECTED_KEYS = ("isselected", "selected", "isactive", "active", "enabled")
_CONNECTED_KEYS = ("connected", "isconnected", "ledgerconnected", "isledgerconnected")


def _folded(row: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).lower(): value for key, value in row.items()}


def _first(folded: Mapping[str, Any], keys: Iterable[str], kind: type) -> Any:
    """The value of the first of ``keys`` (lower case) that holds a ``kind``, or None."""
    return next((folded[key] for key in keys if isinstance(folded.get(key), kind)), None)


def field(row: Any, name: str) -> tuple[bool, Any]:
    """``(present, value)`` of field ``name`` of a JSON object, in any letter case (the spec
    spells some two ways, ``billingId`` / ``billingID``): the exact spelling wins."""
    if not isinstance(row, Mapping):
        return False, None
    if name in row:
        return True, row[name]
    wanted = name.lower()
    for key, value in row.items():
        if str(key).lower() == wanted:
            return True, value
    return False, None


class AnyCase(dict[str, Any]):
    """A JSON object whose fields are also found in another letter case (:func:`field`), as
    templates see rows and deliveries: a map written for ``billingID`` reads ``billingId``."""

    def __missing__(self, key: str) -> Any:
        present, value = field(dict(self), key) if isinstance(key, str) else (False, None)
        if present:
            return value
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and field(dict(self), key)[0]


def any_case(value: Any) -> Any:
    """``value`` with every JSON object in it an :class:`AnyCase` (lists walked)."""
    if isinstance(value, dict):
        return AnyCase({key: any_case(item) for key, item in value.items()})
    if isinstance(value, list):
        return [any_case(item) for item in value]
    return value


def rows(data: Any) -> list[Any]:
    """The rows of a list response, bare or wrapped in a mapping (empty when none)."""
    if isinstance(data, list):
        return data
    if isinstance(data, Mapping):
        folded = _folded(data)
        for key in _WRAPPERS:
            if isinstance(folded.get(key), list):
                return list(folded[key])
    return []


def _name_of(row: Any) -> str | None:
    if isinstance(row, str):
        return row
    if not isinstance(row, Mapping):
        return None
    folded = _folded(row)
    named = [key for key in folded if key.endswith("name")]
    found = _first(folded, [*_NAME_KEYS, *named], str)
    return None if found is None else str(found)


def names(data: Any) -> list[str]:
    """The names in a settings list (strings, or objects with a name-like field), in order,
    without repeats."""
    found: list[str] = []
    for row in rows(data):
        name = _name_of(row)
        if name is not None and name not in found:
            found.append(name)
    return found


def flag(data: Any, keys: Iterable[str] = _CONNECTED_KEYS) -> bool | None:
    """A yes/no answer ("is the ledger connected"), or None when it cannot be told: a boolean,
    a boolean field named like one of ``keys`` (any case) or a ``status`` like ``Connected``."""
    if isinstance(data, bool):
        return data
    if not isinstance(data, Mapping):
        return None
    folded = _folded(data)
    found = _first(folded, keys, bool)
    if found is not None:
        return bool(found)
    status = folded.get("status")
    if isinstance(status, str):
        text = status.replace(" ", "").replace("_", "").lower()
        if text in ("connected", "active", "enabled"):
            return True
        if text in ("disconnected", "notconnected", "inactive", "disabled", "none"):
            return False
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def rates(data: Any) -> list[float]:
    """The tax rates (percent) of a tax-rate list: bare numbers or objects with a rate-like
    field (``rate``, ``taxRate``, ``percentage``...), leaving out rows flagged not selected."""
    found: list[float] = []
    for row in rows(data):
        number = _number(row)
        if number is None and isinstance(row, Mapping):
            folded = _folded(row)
            if any(folded.get(key) is False for key in _SELECTED_KEYS):
                continue
            named = [folded.get(key) for key in _RATE_KEYS]
            loose = [value for key, value in folded.items() if "rate" in key or "percent" in key]
            number = next((n for value in named + loose if (n := _number(value)) is not None), None)
        if number is not None:
            found.append(number)
    return found


def entity_status(data: Any) -> str | None:
    """A client's status from its record (``status``, ``clientStatus``...), or None."""
    if not isinstance(data, Mapping):
        return None
    found = _first(_folded(data), ("status", "clientstatus", "entitystatus"), str)
    return None if found is None else str(found)


def parse_time(value: Any) -> datetime | None:
    """A server timestamp (ISO 8601, ``Z`` or offset; naive is UTC) as aware UTC, or None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
