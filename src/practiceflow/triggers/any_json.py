"""Any JSON a sender signs can be stored: what JSON proper cannot hold is kept as text.

Python reads more than standard JSON: ``NaN``, ``Infinity`` and ``-Infinity``, numbers too
large for a float (``1e999`` reads as infinity), and ``\\ud83d``, half of a UTF-16
surrogate pair (a name cut in the middle of an emoji by a UTF-16 service arrives exactly
so). None of these can be written back as JSON, nor encrypted as UTF-8, so a delivery
carrying one could be neither stored nor listed. :func:`standard_json` reads such a body
again keeping each as the text the sender wrote: ``"NaN"``, ``"1e999"``, and a lone
surrogate as its escape ``"\\ud83d"`` (six characters). The delivery is then stored and
run like any other; a recipe sees the text.
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
    """A delivery's JSON body as values standard JSON can hold.

    Args:
        body: the raw body, as signed.
        parsed: the body as ``json.loads`` read it.

    Returns:
        ``parsed`` itself when the body holds nothing JSON proper cannot (the usual
        case, told by one scan of the bytes); else the body read again with non-standard
        numbers kept as their text and lone surrogates as their escapes.
    """
    if not _SUSPECT.search(body):
        return parsed
    try:
        return _standard(json.loads(body, parse_constant=str, parse_float=_number))
    except RecursionError:  # nested deeper than this walk may go: kept as text
        return body.decode("utf-8", "backslashreplace")
