"""Any JSON a sender signs can be stored: what JSON proper cannot hold is kept as text.

Python reads ``NaN``, ``Infinity``, ``1e999`` and lone UTF-16 surrogates (``\\ud83d``, half
an emoji), none of which can be written back as JSON or encrypted as UTF-8; such values
are kept as the text the sender wrote (docs/architecture.md, "Receiving events").
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

#: What may hide a value JSON cannot hold: a constant, a long exponent or mantissa, or an
#: escaped surrogate. A match only means the body is read again, carefully.
_SUSPECT: Final = re.compile(rb"NaN|Infinity|[eE][+]?\d{3}|\d{309}|\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _number(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


def _escaped(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _standard(value: Any) -> Any:
    if isinstance(value, str):
        return _escaped(value)
    if isinstance(value, list):
        return [_standard(item) for item in value]
    if isinstance(value, dict):
        return {_escaped(key): _standard(item) for key, item in value.items()}
    return value


def standard_json(body: bytes, parsed: Any) -> Any:
    """A delivery's JSON body (``parsed`` from the raw ``body``) as values standard JSON
    can hold: ``parsed`` itself in the usual case (told by one scan of the bytes), else
    read again with non-standard numbers as their text and lone surrogates escaped."""
    if not _SUSPECT.search(body):
        return parsed
    try:
        return _standard(json.loads(body, parse_constant=str, parse_float=_number))
    except RecursionError:  # nested deeper than this walk may go: kept as text
        return body.decode("utf-8", "backslashreplace")
