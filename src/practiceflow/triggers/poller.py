"""Polling a list endpoint with a durable cursor: every change once, none lost.

One :class:`Poller` per (practice, trigger name): a :class:`~.shared_poll.SharedPoll` of one
trigger (triggers reading the same list share one, see :mod:`.shared_poll`). Its state lives
in the state store (:mod:`.poll_member`), so a new ``Poller`` over the same store carries on
where the last one stopped:

* the **cursor** is the newest ``lastUpdated`` (as the server wrote it) among the rows
  handed over, with the dedupe keys of the rows *at* that instant (boundary keys);
* **known keys** (``poll.known``), kept under ``<name>#known``, tell new records from
  changed ones where rows carry no creation time.

The rules:

* **From now.** The first poll (no cursor, no ``since``) reads the whole list once, fires
  nothing, and sets the cursor to the newest ``lastUpdated`` it saw, remembering keys.
  The cursor is always a value the server wrote, never a local clock reading, so a
  future-``lastUpdated`` 400 cannot happen; the value sent is also never later than the
  local clock (the client refuses that), which can only widen the window.
* **Handed over first.** Each event is stored (one transaction, deduplicated by its key)
  before the cursor moves past it; a crash at any point repeats work, never loses it.
* **Same second.** ``lastUpdated`` goes out truncated to the second and is "at or after",
  so rows of the boundary second come back: those at the cursor with a boundary key, and
  any older than the cursor, are skipped; the store's dedupe catches the rest.
* **Moving pages.** Once this walk has shown the list ordered by the cursor field (two
  pages read, each ordered, the second starting at or after the end of the first), a
  full page makes the next request start again from that page's newest second (page 1)
  instead of asking for the next page, so rows that move while we read (changed again)
  cannot slip between pages. Until then, and on any list seen out of order, the pages are
  read in turn and the cursor moves only at the end: the order of rows under
  ``lastUpdated`` is not shown by the spec, so one ordered-looking page proves nothing.
* **Any paging.** A first page shorter than the ``pageSize`` sent may mean the server
  ignores ``pageSize``: the next page is asked for once (empty: the end). A page repeating
  the rows of the page before means the list ignores ``pageNumber``: it was read whole.
* **Budget.** With nothing changed, a poll is one request. :meth:`Poller.next_interval`
  stretches the interval as the server's ``X-RateLimit-Remaining`` falls.

Cursor kinds: ``lastUpdated``; ``date_range`` (bills: a window of bill dates from
``lookback_days`` ago to tomorrow, re-read each poll, new rows told apart by known keys);
``none`` (a list with no filter, read whole each poll).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from practiceflow.api import Client
from practiceflow.errors import PracticeflowError
from practiceflow.state import StateStore
from practiceflow.triggers.definition import PollSpec, TriggerDefinition
from practiceflow.triggers.poll_member import (
    PollMember,
    PollResult,
)
from practiceflow.triggers.shared_poll import SharedPoll

logger = logging.getLogger("practiceflow.triggers.poller")


def adapt_interval(
    base: float, limit: int | None, remaining: int | None, maximum: float = 3600.0
) -> float:
    """Stretch a poll interval as the rate budget runs low.

    Args:
        base: the configured interval in seconds.
        limit: ``X-RateLimit-Limit`` last seen, if any.
        remaining: ``X-RateLimit-Remaining`` last seen, if any.
        maximum: the longest interval returned.

    Returns:
        ``base`` with half the budget or more left; 2x below a half, 4x below a quarter,
        8x below a tenth, 16x when nothing is left.
    """
    if not limit or remaining is None or limit <= 0:
        return base
    left = remaining / limit
    factor = 1.0
    for threshold, stretch in ((0.0, 16.0), (0.1, 8.0), (0.25, 4.0), (0.5, 2.0)):
        if left <= threshold:
            factor = stretch
            break
    return min(base * factor, maximum)


class Poller:
    """Polls one trigger's list endpoint for one practice.

    Args:
        client: the API client.
        store: the state store (cursor, known keys, events).
        practice: the practice's name in the store.
        definition: the trigger (it must have a ``poll`` section).
        options: the trigger's options (``input`` of its templates).
        name: the trigger's name (default: its key).
        since: start from this ISO 8601 instant (or date) instead of "from now"; used only
            when no cursor is stored yet.
        today: the current UTC date for ``date_range`` windows (tests pass a fake).

    Raises:
        ConfigError: the trigger cannot be polled.
    """

    def __init__(
        self,
        client: Client,
        store: StateStore,
        practice: str,
        definition: TriggerDefinition,
        options: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        since: str | None = None,
        today: Callable[[], date] | None = None,
    ) -> None:
        self.member = PollMember(store, practice, definition, options, name=name, since=since)
        self.client = client
        self.store = store
        self.practice = practice
        self.definition = definition
        self.spec: PollSpec = self.member.spec
        self.options = self.member.options
        self.name = self.member.name
        self.since = since
        self.shared = SharedPoll(client, [self.member], today=today)

    def poll_once(self) -> PollResult:
        """Poll once: store the new events, then move the cursor.

        Returns:
            What was found.

        Raises:
            ApiError: the list endpoint refused (401, 403, 404, 400...); nothing moved.
            TransportError: no answer; nothing moved past what was stored.
        """
        return self.shared.poll_once().results[self.name]

    def next_interval(self, base: float, maximum: float = 3600.0) -> float:
        """The seconds to wait before the next poll, given the budget left.

        Args:
            base: the configured interval.
            maximum: the cap.

        Returns:
            See :func:`adapt_interval`.
        """
        return budget_interval(self.client, base, maximum)

    def run(self, stop: threading.Event, interval: float = 60.0) -> None:
        """Poll until ``stop`` is set, waiting :meth:`next_interval` between polls.

        Transient failures are logged and retried at the next poll; configuration and
        authentication failures end the loop by raising.
        """
        while not stop.is_set():
            try:
                self.poll_once()
            except PracticeflowError as exc:
                if exc.kind != "transient":
                    raise
                logger.warning("poll of %s failed, retrying next time: %s", self.name, exc)
            stop.wait(self.next_interval(interval))


def budget_interval(client: Any, base: float, maximum: float = 3600.0) -> float:
    """``base`` stretched by the budget the client last saw left (:func:`adapt_interval`).

    Args:
        client: the API client (its ``rate_limit_status``).
        base: the interval wanted.
        maximum: the cap.

    Returns:
        The interval to wait.
    """
    status = getattr(client, "rate_limit_status", None)
    if status is None:
        return base
    return adapt_interval(base, status.limit, status.remaining, max(maximum, base))
