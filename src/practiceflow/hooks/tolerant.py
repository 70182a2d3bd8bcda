"""Readers for response shapes the spec leaves "not shown".

Settings lists, the ledger status and the ledger tax rates have no documented shape, so
these helpers accept the plausible ones and return None or an empty list when they cannot
tell, letting the caller warn instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_WRAPPERS = ("items", "data", "results", "value", "values", "rows", "list")
_NAME_KEYS = ("name", "displayname", "title", "label")
_RATE_KEYS = ("rate", "taxrate", "effectiverate", "percentage", "percent", "taxpercent")
_SELECTED_KEYS = ("isselected", "selected", "isactive", "active", "enabled")
_CONNECTED_KEYS = ("connected", "isconnected", "ledgerconnected", "isledgerconnected")


def _folded(row: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key).lower(): value for key, value in row.items()}


def field(row: Any, name: str) -> tuple[bool, Any]:
    """Whether ``row`` carries ``name`` in any letter case, and its value.

    The spec spells some fields two ways (``billingId`` / ``billingID``); the exact
    spelling wins, else the first key equal to ``name`` ignoring case.

    Args:
        row: a parsed JSON object (anything else carries no field).
        name: the field name.

    Returns:
        ``(present, value)``; ``(False, None)`` when absent.
    """
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
    """A JSON object whose fields are also found in another letter case.

    ``row.get("billingID")`` and ``row["billingID"]`` find ``billingId`` when only that
    spelling is present (the exact spelling wins). Templates see rows and delivery data
    through it, so a mapping written for one spelling reads the other.
    """

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
    """Return the rows of a list response: a bare list, or a list wrapped in a mapping.

    Args:
        data: a parsed JSON body.

    Returns:
        The rows, or an empty list when none can be found.
    """
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
    for key in _NAME_KEYS:
        if isinstance(folded.get(key), str):
            return str(folded[key])
    for key, value in folded.items():
        if key.endswith("name") and isinstance(value, str):
            return value
    return None


def names(data: Any) -> list[str]:
    """Return the names in a settings list: strings, or objects with a name-like field.

    Args:
        data: a parsed JSON body.

    Returns:
        The names in order, without repeats.
    """
    found: list[str] = []
    for row in rows(data):
        name = _name_of(row)
        if name is not None and name not in found:
            found.append(name)
    return found


def flag(data: Any, keys: Iterable[str] = _CONNECTED_KEYS) -> bool | None:
    """Read a yes/no answer such as "is the ledger connected" from an unknown shape.

    Args:
        data: a parsed JSON body: a boolean, or a mapping with a boolean field named like one
            of ``keys`` (any letter case) or a ``status`` text such as ``Connected``.
        keys: field names to look for, lower case.

    Returns:
        The answer, or None when it cannot be told.
    """
    if isinstance(data, bool):
        return data
    if not isinstance(data, Mapping):
        return None
    folded = _folded(data)
    for key in keys:
        if isinstance(folded.get(key), bool):
            return bool(folded[key])
    status = folded.get("status")
    if isinstance(status, str):
        text = status.replace(" ", "").replace("_", "").lower()
        if text in ("connected", "active", "enabled"):
            return True
        if text in ("disconnected", "notconnected", "inactive", "disabled", "none"):
            return False
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def rates(data: Any) -> list[float]:
    """Return the tax rates (in percent) of a tax-rate list of unknown shape.

    Rows may be bare numbers or objects with a numeric rate-like field (``rate``,
    ``taxRate``, ``effectiveRate``, ``percentage``...). Rows carrying a selected / active
    flag that is false are left out.

    Args:
        data: a parsed JSON body.

    Returns:
        The rates found; empty when none can be read.
    """
    found: list[float] = []
    for row in rows(data):
        number = _number(row)
        if number is None and isinstance(row, Mapping):
            folded = _folded(row)
            if any(folded.get(key) is False for key in _SELECTED_KEYS):
                continue
            for key in _RATE_KEYS:
                number = _number(folded.get(key))
                if number is not None:
                    break
            else:
                number = next(
                    (
                        _number(value)
                        for key, value in folded.items()
                        if ("rate" in key or "percent" in key) and _number(value) is not None
                    ),
                    None,
                )
        if number is not None:
            found.append(number)
    return found


def entity_status(data: Any) -> str | None:
    """Return a client's status from its detail record (``status`` or ``clientStatus``).

    Args:
        data: the parsed body of ``GET /api/v1/entities/{key}``.

    Returns:
        The status text, or None when the record has none.
    """
    if not isinstance(data, Mapping):
        return None
    folded = _folded(data)
    for key in ("status", "clientstatus", "entitystatus"):
        if isinstance(folded.get(key), str):
            return str(folded[key])
    return None
