"""The sandbox clock: wall time plus an offset that the admin surface moves."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime


class SandboxClock:
    """UTC time as the sandbox sees it; ``advance`` moves it in either direction.

    Rate-limit windows, ``lastUpdated`` stamps, the future-``lastUpdated`` check and the
    webhook ``X-Svc-Timestamp`` all read this clock, so tests can cross a window or a
    signature tolerance without sleeping.
    """

    def __init__(self) -> None:
        self._offset = 0.0
        self._lock = threading.Lock()

    @property
    def offset(self) -> float:
        """Seconds added to the wall clock."""
        return self._offset

    def now(self) -> float:
        """The sandbox time as Unix seconds."""
        return time.time() + self._offset

    def advance(self, seconds: float) -> float:
        """Move the clock by ``seconds`` (negative moves it back).

        Args:
            seconds: how far to move.

        Returns:
            The new offset in seconds.
        """
        with self._lock:
            self._offset += seconds
            return self._offset

    def set_offset(self, seconds: float) -> None:
        """Set the offset from the wall clock outright (``0`` is real time).

        Args:
            seconds: the new offset.
        """
        with self._lock:
            self._offset = seconds


def format_time(timestamp: float) -> str:
    """Render Unix seconds as UTC ISO 8601 with milliseconds and ``Z``.

    Truncating (not rounding) keeps ``lastUpdated`` "at or after" sound: a value read back
    from a record never lies after the record's own time.

    Args:
        timestamp: Unix seconds.

    Returns:
        Text such as ``2025-01-31T09:30:00.125Z``.
    """
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time(text: str) -> float:
    """Parse an ISO 8601 date or datetime; a value without an offset is UTC.

    Args:
        text: the value as given.

    Returns:
        Unix seconds.

    Raises:
        ValueError: the text is not ISO 8601.
    """
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
