"""A fake clock for tests: time moves only when a test advances it or code sleeps on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

#: Where a :class:`FakeClock` starts unless told otherwise.
DEFAULT_START: Final = datetime(2025, 3, 1, 9, 0, 0, tzinfo=UTC)
#: What :meth:`FakeClock.monotonic` reads at the start (only differences mean anything).
MONOTONIC_START: Final = 1_000.0


class FakeClock:
    """A clock that moves only when told to, recording every sleep.

    One clock serves everything in practiceflow that takes one::

        clock = FakeClock()
        store = open_store("sqlite://state.db", clock=clock)         # reads clock()
        budget = RateBudget(clock=clock.monotonic, sleep=clock.sleep)  # never really waits
        clock.advance(timedelta(minutes=5))

    Args:
        start: the wall-clock time at the start (UTC; a naive time is taken as UTC).

    ``sleeps`` holds every sleep, in seconds, in order.
    """

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self.start = start if start.tzinfo else start.replace(tzinfo=UTC)
        self.sleeps: list[float] = []
        self._elapsed = 0.0

    def __call__(self) -> datetime:
        """The current wall-clock time (a state store's ``clock``)."""
        return self.current

    @property
    def current(self) -> datetime:
        """The current wall-clock time."""
        return self.start + timedelta(seconds=self._elapsed)

    def utcnow(self) -> datetime:
        """The current wall-clock time (what templates read as ``now``: ``set_clock``)."""
        return self.current

    def monotonic(self) -> float:
        """The current time in seconds, as ``time.monotonic`` (a rate budget's ``clock``)."""
        return MONOTONIC_START + self._elapsed

    def advance(self, delta: timedelta | float) -> None:
        """Move the clock on by ``delta`` (a timedelta, or seconds)."""
        self._elapsed += delta.total_seconds() if isinstance(delta, timedelta) else delta

    def sleep(self, seconds: float) -> None:
        """Sleep on the clock: record the sleep and move on by it (a rate budget's ``sleep``);
        AssertionError for a negative one."""
        if not seconds >= 0:
            message = f"a sleep of {seconds} seconds"
            raise AssertionError(message)
        self.sleeps.append(seconds)
        self._elapsed += seconds

    @property
    def slept(self) -> float:
        """Seconds slept in all."""
        return sum(self.sleeps)
