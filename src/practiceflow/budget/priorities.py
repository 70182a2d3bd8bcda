"""Sharing one practice's rate budget between recipes, with priorities.

Every recipe and trigger that uses the same credentials spends one
:class:`~practiceflow.api.RateBudget` (60/min, 1000/h, 10000/day by default). When it runs
short, who goes first matters: a person waiting on their own ``action`` call and the steps
of an event already received go before polling, and polling goes before backfill.

:class:`PriorityBudget` is that budget with a queue in front: requests enter the limiter
one at a time, best priority first (then first come, first served), so when the budget is
spent the next free slot goes to the most urgent waiter. The priority of the current
thread's requests is set with :func:`priority`::

    budget = PriorityBudget()
    client = Client(..., budget=budget)          # every client of these credentials
    with priority(Priority.POLL):
        client.get("/api/v1/entities", {...})    # waits behind event work
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum

from pyrate_limiter import AbstractBucket

from practiceflow.budget.rate_budget import RateBudget, RateLimits

__all__ = ["Priority", "PriorityBudget", "current_priority", "priority"]


class Priority(IntEnum):
    """Who is asking; a lower value goes first."""

    ACTION = 0
    """A person's own call (``practiceflow action ...``): someone is waiting."""
    EVENT = 1
    """A step of a run for an event already received."""
    POLL = 2
    """A polling trigger looking for changes."""
    BACKFILL = 3
    """A full import or backfill: whatever budget is left."""


_PRIORITY: contextvars.ContextVar[Priority] = contextvars.ContextVar(
    "practiceflow_priority", default=Priority.EVENT
)


def current_priority() -> Priority:
    """The priority of requests made now on this thread (``EVENT`` unless set)."""
    return _PRIORITY.get()


@contextmanager
def priority(level: Priority) -> Iterator[None]:
    """Make the requests of this block wait with ``level`` priority.

    Args:
        level: the priority.

    Yields:
        Nothing; the previous priority is restored on exit.
    """
    token = _PRIORITY.set(level)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


class PriorityBudget(RateBudget):
    """A :class:`RateBudget` that admits waiting requests best priority first.

    Args:
        limits: the windows (spec defaults when None).
        bucket: a shared pyrate-limiter bucket, as for :class:`RateBudget`.
        clock: current time in seconds.
        sleep: how to wait.
    """

    def __init__(
        self,
        limits: RateLimits | None = None,
        *,
        bucket: AbstractBucket | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__(limits, bucket=bucket, clock=clock, sleep=sleep)
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

    def acquire(self, method: str, path: str, deadline: float | None = None) -> float:
        """Wait for this request's turn by priority, then for the budget itself.

        Args:
            method: HTTP method (for messages).
            path: URL path (for messages).
            deadline: as for :meth:`RateBudget.acquire`.

        Returns:
            Seconds spent waiting for the budget.

        Raises:
            RateLimitError: as for :meth:`RateBudget.acquire`.
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
            waited = super().acquire(method, path, deadline)
            self.admitted_by_priority[level] += 1
            return waited
        finally:
            with self._turn:
                self._busy = False
                self._turn.notify_all()
