"""The client's rate budget: 60/min, 1000/h and 10000/day by default, and ``Retry-After``.

pyrate-limiter's bucket counts the windows (in memory, or in SQLite or PostgreSQL to share
them); it is called directly, not through its ``Limiter``, for an injectable clock and sleep,
a cap on the total wait and a budget-wide pause after a 429. Requests enter one at a time,
best :class:`Priority` first (``with priority(Priority.POLL): ...``). A shared bucket needs a
wall clock (``clock=time.time``); a ``Retry-After`` pause lives in this process only.
"""

from __future__ import annotations

import contextvars
import email.utils
import hashlib
import heapq
import itertools
import logging
import math
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum
from operator import attrgetter
from typing import Any, Final

from pyrate_limiter import AbstractBucket, Duration, InMemoryBucket, Rate, RateItem

from practiceflow.errors import BugError, ConfigError, RateLimitError


class Priority(IntEnum):
    """Who is asking; a lower value goes first."""

    ACTION = 0  # a person's own call (``practiceflow action ...``): someone is waiting
    EVENT = 1  # a step of a run for an event already received
    POLL = 2  # a polling trigger looking for changes
    BACKFILL = 3  # a full import or backfill: whatever budget is left


_PRIORITY: contextvars.ContextVar[Priority] = contextvars.ContextVar(
    "practiceflow_priority", default=Priority.EVENT
)


def current_priority() -> Priority:
    """The priority of requests made now on this thread (``EVENT`` unless set)."""
    return _PRIORITY.get()


@contextmanager
def priority(level: Priority) -> Iterator[None]:
    """Make the requests of this block wait with ``level`` priority (restored on exit)."""
    token = _PRIORITY.set(level)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


logger = logging.getLogger("practiceflow.api")

_ITEM_NAME: Final = "practiceflow"
_STAMP: Final = attrgetter("timestamp")
_HEADERS: Final = ("Limit", "Remaining", "Reset")
_LEAK_EVERY: Final = 256
_TABLE_PREFIX: Final = "pf_budget_"


def admitted_in_windows(items: list[RateItem], now_ms: int, windows_ms: list[int]) -> list[int]:
    """How many of ``items`` (an in-memory bucket's, in time order) fall in each of the last
    ``windows_ms`` before ``now_ms``; reads a copy, as admissions go on."""
    items = list(items)
    return [len(items) - bisect_left(items, now_ms - n, key=_STAMP) for n in windows_ms]


def budget_table(client_id: str) -> str:
    """A Client ID's table in a shared bucket, the same in every process: a digest (ids need
    not be identifiers), lowercase, at most 40 characters."""
    digest = hashlib.sha256(client_id.encode()).hexdigest()[:24]
    return f"{_TABLE_PREFIX}{digest}"


@dataclass(frozen=True)
class RateLimits:
    """How many requests the client may send, and how long one request may wait.

    Attributes:
        per_minute: requests per rolling minute (``per_hour``, ``per_day``: hour, day).
        max_wait: cap, in seconds, on the total time one call may spend waiting for the
            budget, for ``Retry-After`` pauses and for backoff; past it the call raises
            :class:`~practiceflow.errors.RateLimitError` instead of waiting on.
        retry_after_floor: the shortest pause after a 429, in seconds, so that
            ``Retry-After: 0`` cannot turn into a busy loop.
    """

    per_minute: int = 60
    per_hour: int = 1000
    per_day: int = 10000
    max_wait: float = 600.0
    retry_after_floor: float = 1.0

    def _windows(self) -> list[tuple[int, Duration, str]]:
        """Each window's limit, length and unit, shortest first."""
        return [
            (self.per_minute, Duration.MINUTE, "min"),
            (self.per_hour, Duration.HOUR, "h"),
            (self.per_day, Duration.DAY, "day"),
        ]

    def __post_init__(self) -> None:
        for name in ("per_minute", "per_hour", "per_day"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                message = f"RateLimits.{name}: got {value!r}; expected a positive integer"
                raise ConfigError(message)
        for name in ("max_wait", "retry_after_floor"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0 or math.isnan(value):
                message = f"RateLimits.{name}: got {value!r}; expected seconds >= 0"
                raise ConfigError(message)
        windows = self._windows()
        for (short, short_ms, _), (long, long_ms, _) in itertools.pairwise(windows):
            if not (short < long and short / short_ms.value >= long / long_ms.value):
                message = (
                    f"RateLimits: got {self.describe()}; each longer window needs a larger "
                    "limit and no higher average rate than the shorter one (the default is "
                    "60/min, 1000/h, 10000/day)"
                )
                raise ConfigError(message)

    def rates(self) -> list[Rate]:
        """The pyrate-limiter rates, shortest window first."""
        return [Rate(limit, length) for limit, length, _ in self._windows()]

    def describe(self) -> str:
        """Human form, e.g. ``60/min, 1000/h, 10000/day``."""
        return ", ".join(f"{limit}/{unit}" for limit, _, unit in self._windows())


@dataclass(frozen=True)
class RateLimitStatus:
    """The last ``X-RateLimit-*`` headers the server sent (``limit`` and ``remaining`` as
    integers when they were; ``reset`` as sent: the spec does not say its unit), and the
    budget clock's time when they arrived."""

    limit: int | None
    remaining: int | None
    reset: str | None
    observed_at: float


def _as_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def parse_retry_after(
    value: str | None, *, wall_clock: Callable[[], float] = time.time
) -> float | None:
    """Seconds (never negative) to wait from a ``Retry-After`` header, delta seconds or an
    HTTP date (read against ``wall_clock``); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - wall_clock())
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


class RateBudget:
    """The multi-window budget of one Client ID, shared by every thread using it; waiting
    requests are admitted best priority first (see the module).

    Args:
        limits: the windows and waits; spec defaults when None.
        bucket: a synchronous pyrate-limiter bucket holding the windows (one shared between
            processes, say); in memory when None.
        clock: current time in seconds (``time.monotonic`` by default).
        sleep: how to wait (``time.sleep`` by default); tests inject a fake.

    Attributes:
        bucket: the bucket counting the windows (read it, never put into it); ``clock`` the
            clock the budget counts with.
        status: the last ``X-RateLimit-*`` values the server sent, if any.
        admitted_by_priority: requests admitted so far, by priority.
    """

    def __init__(
        self,
        limits: RateLimits | None = None,
        *,
        bucket: AbstractBucket | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.limits = limits or RateLimits()
        self.bucket: AbstractBucket = bucket or InMemoryBucket(self.limits.rates())
        if self.bucket.is_async:
            message = "RateBudget: got an asynchronous bucket; the client needs a synchronous one"
            raise ConfigError(message)
        self.clock = clock or time.monotonic
        self._sleep = sleep or time.sleep
        self._lock = threading.Lock()
        self._paused_until = -math.inf
        self._admitted = 0
        self.status: RateLimitStatus | None = None
        self._on_admit: list[Callable[[], None]] = []
        self._turn = threading.Condition()
        self._queue: list[tuple[int, int]] = []
        self._serial = itertools.count()
        self._busy = False
        self.admitted_by_priority: dict[Priority, int] = {level: 0 for level in Priority}

    def waiting(self) -> dict[Priority, int]:
        """How many requests wait for the budget now, by priority."""
        with self._turn:
            counts = {level: 0 for level in Priority}
            for level, _ in self._queue:
                counts[Priority(level)] += 1
            return counts

    def on_admit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` on the requesting thread after each request admitted (the
        console's charts count them); a failing one is logged, never raised."""
        self._on_admit.append(callback)

    @property
    def paused_until(self) -> float | None:
        """Clock time until which no request is sent (after a 429), or None."""
        return None if self._paused_until == -math.inf else self._paused_until

    def pause_for(self, seconds: float) -> None:
        """Hold every request of this budget for ``seconds``, at least
        ``limits.retry_after_floor`` (never shortens a pause)."""
        until = self.clock() + max(seconds, self.limits.retry_after_floor)
        with self._lock:
            self._paused_until = max(self._paused_until, until)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Remember the ``X-RateLimit-*`` headers of a response, when it has any."""
        limit, remaining, reset = (headers.get(f"X-RateLimit-{name}") for name in _HEADERS)
        if limit is not None or remaining is not None or reset is not None:
            reset = None if reset is None else reset.strip()
            self.status = RateLimitStatus(_as_int(limit), _as_int(remaining), reset, self.clock())

    def acquire(self, method: str, path: str, deadline: float | None = None) -> float:
        """Wait for this request's turn by priority, then until the budget admits it; count
        it. Returns the seconds waited.

        Raises:
            RateLimitError: admitting it would mean waiting past ``deadline`` (clock time;
                None: no cap); ``retry_after`` says how long the wait would have been.
        """
        level = current_priority()
        ticket = (int(level), next(self._serial))
        with self._turn:
            heapq.heappush(self._queue, ticket)
            while self._busy or self._queue[0] != ticket:
                self._turn.wait()
            heapq.heappop(self._queue)
            self._busy = True
        try:
            waited = self._admit(method, path, deadline)
            self.admitted_by_priority[level] += 1
            return waited
        finally:
            with self._turn:
                self._busy = False
                self._turn.notify_all()

    def _admit(self, method: str, path: str, deadline: float | None) -> float:
        waited = 0.0
        while True:
            now = self.clock()
            with self._lock:
                wait = self._paused_until - now
                paused = wait > 0
                if not paused:
                    wait = self._try_put(now)
            if wait <= 0:
                for callback in self._on_admit:
                    try:
                        callback()
                    except Exception:  # bookkeeping must never stop a request
                        logger.warning("rate budget bookkeeping failed", exc_info=True)
                return waited
            if paused:
                reason = "the server asked to wait (Retry-After)"
            else:
                reason = f"the local rate budget ({self.limits.describe()}) is spent"
            if deadline is not None and now + wait > deadline:
                hint = (
                    f"{reason}; the next slot is {wait:.1f}s away, past the wait cap "
                    f"(RateLimits.max_wait={self.limits.max_wait:g}s); nothing was sent for "
                    "this attempt; try later or raise max_wait"
                )
                raise RateLimitError(method, path, 429, retry_after=wait, hint=hint)
            logger.info("%s %s waits %.3fs: %s", method, path, wait, reason)
            self._sleep(wait)
            waited += wait

    def _try_put(self, now: float) -> float:
        """Count one request at ``now``; return 0 when admitted, else seconds to wait."""
        now_ms = int(now * 1000)
        item = RateItem(_ITEM_NAME, now_ms)
        decision: Any = self.bucket.put_decision(item)  # synchronous: __init__ checks
        if decision.allowed:
            self._admitted += 1
            if self._admitted % _LEAK_EVERY == 0:
                self.bucket.leak(now_ms)
            return 0.0
        retry_ms = decision.retry_after_ms
        if retry_ms is None:
            retry_ms = self.bucket.waiting(item)
        if not isinstance(retry_ms, int) or retry_ms < 0:
            message = f"RateBudget: the bucket reported a wait of {retry_ms!r} ms for one request"
            raise BugError(message)
        # At least a millisecond, so a zero from the bucket cannot spin.
        return max(retry_ms, 1) / 1000

    def close(self) -> None:
        """Release the bucket's resources (a database connection, for shared buckets)."""
        self.bucket.close()
