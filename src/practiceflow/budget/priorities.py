"""Who goes first when a practice's rate budget runs short.

A person waiting on their own ``action`` call and the steps of an event already received
go before polling, and polling goes before backfill. :func:`priority` sets the priority of
the current thread's requests; :class:`~practiceflow.budget.RateBudget` admits waiting
requests in that order.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

__all__ = ["Priority", "current_priority", "priority"]


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
