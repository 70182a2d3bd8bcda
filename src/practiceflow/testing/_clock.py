"""A clock that moves only when something sleeps on it: tests run at once, the same every time.

One :class:`ManualClock` stands for every clock a run reads: the wall clock templates call
``now`` (:meth:`utcnow`), the monotonic clock of the rate budget (``clock()``), and the
sleeps of retries and ``Retry-After`` (:meth:`sleep`, which advances both)::

    clock = ManualClock(datetime(2026, 1, 5, 9, tzinfo=UTC))
    Client(..., clock=clock, sleep=clock.sleep, utcnow=clock.utcnow)
    open_store(path, clock=clock.utcnow)
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["ManualClock"]


class ManualClock:
    """A fake clock (see the module docstring).

    Args:
        start: the wall-clock time it starts at (UTC; naive is taken as UTC).

    Attributes:
        sleeps: every sleep asked of it, in seconds, in order.
    """

    def __init__(self, start: datetime) -> None:
        self._start = start if start.tzinfo else start.replace(tzinfo=UTC)
        self._elapsed = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        """Monotonic seconds (what a rate budget reads)."""
        return 1_000.0 + self._elapsed

    def utcnow(self) -> datetime:
        """The wall-clock time now (UTC)."""
        return (self._start + timedelta(seconds=self._elapsed)).astimezone(UTC)

    def sleep(self, seconds: float) -> None:
        """Move the clock on instead of waiting."""
        seconds = max(0.0, float(seconds))
        self.sleeps.append(seconds)
        self._elapsed += seconds

    def advance(self, seconds: float) -> None:
        """Move the clock on (a test's way of letting time pass)."""
        self._elapsed += max(0.0, float(seconds))

    @property
    def slept(self) -> float:
        """Seconds slept in all."""
        return sum(self.sleeps)
