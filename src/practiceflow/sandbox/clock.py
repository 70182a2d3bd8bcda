"""The sandbox clock: wall time plus an offset the admin surface moves. Rate windows,
``lastUpdated`` and webhook timestamps read it, so tests cross a window without sleeping.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime


class SandboxClock:
    """UTC time as the sandbox sees it: the wall clock plus ``offset`` seconds (either sign)."""

    def __init__(self) -> None:
        self.offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """The sandbox time as Unix seconds."""
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        """Move the clock by ``seconds`` (negative moves it back)."""
        with self._lock:
            self.offset += seconds


def format_time(timestamp: float) -> str:
    """Unix seconds as UTC ISO 8601 with milliseconds and ``Z`` (``2025-01-31T09:30:00.125Z``),
    truncated: a ``lastUpdated`` read back never lies after the record's own time."""
    moment = datetime.fromtimestamp(timestamp, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time(text: str) -> float:
    """Unix seconds of an ISO 8601 date or datetime (UTC without an offset); ValueError if not."""
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
