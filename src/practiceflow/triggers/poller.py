"""Polling a list endpoint with a durable cursor: every change once, none lost.

One :class:`Poller` per (practice, trigger): a :class:`~.shared_poll.SharedPoll` of one
trigger, whose state (cursor, boundary keys, known keys) lives in the store via
:mod:`.poll_member`. The rules that keep the promises:

* **From now**: the first poll fires nothing and sets the cursor to the newest
  ``lastUpdated`` the server wrote (never a local clock reading).
* **Handed over first**: events are stored, deduplicated, before the cursor moves.
* **Same second**: ``lastUpdated`` is "at or after", truncated to the second, so boundary
  rows come back and are skipped by boundary key or the store's dedupe.
* **Moving pages**: only once the list has shown itself ordered does a full page restart
  from its newest second; otherwise pages are read in turn and the cursor moves at the end.
* **Any paging**: a short first page or a repeated page means the server ignores paging.

Cursor kinds: ``lastUpdated``, ``date_range`` (bills, a re-read window) and ``none``.
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
