"""Durations a recipe gives, such as a trigger's ``max_delay``: seconds, or ``15m``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

#: The ``max_delay`` a recipe may ask for, in seconds: from 10 s (the daily budget allows
#: one request per 8.64 s) to one day.
MAX_DELAY_RANGE: Final = (10.0, 86400.0)
_UNITS: Final[Mapping[str, float]] = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def read_max_delay(value: object) -> float | None:
    """Seconds of a ``max_delay`` (a number, or ``90s``, ``15m``, ``2h``, ``1d``)."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        unit = _UNITS.get(text[-1])
        number = text[:-1] if unit is not None else text
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            return None
    low, high = MAX_DELAY_RANGE
    return seconds if seconds is not None and low <= seconds <= high else None


def max_delay_problem(value: object) -> str | None:
    """What is wrong with a ``max_delay`` (got, and what would be valid), or ``None``."""
    if read_max_delay(value) is not None:
        return None
    low, high = MAX_DELAY_RANGE
    return (
        f"got {value!r}; expected a duration from {low:.0f} s to {high:.0f} s, "
        "as seconds or with a unit (90s, 15m, 2h, 1d)"
    )
