"""Polling one trigger's list endpoint with a durable cursor: every change once, none lost.

A :class:`Poller` is a :class:`~.shared_poll.SharedPoll` of one trigger (its state: a
:mod:`.poll_member`); the rules are in docs/architecture.md ("Receiving events").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from practiceflow.api import Client
from practiceflow.state import StateStore
from practiceflow.triggers.definition import TriggerDefinition
from practiceflow.triggers.poll_member import PollMember, PollResult
from practiceflow.triggers.shared_poll import SharedPoll


def budget_interval(client: Any, base: float, maximum: float = 3600.0) -> float:
    """``base`` stretched by the rate budget the client last saw left (at most ``maximum``):
    2x below a half, 4x below a quarter, 8x below a tenth, 16x when nothing is left."""
    status = getattr(client, "rate_limit_status", None)
    if status is None or not status.limit or status.remaining is None or status.limit <= 0:
        return base
    left = status.remaining / status.limit
    factor = next(
        (f for below, f in ((0.0, 16), (0.1, 8), (0.25, 4), (0.5, 2)) if left <= below), 1
    )
    return min(base * factor, max(maximum, base))


class Poller:
    """Polls one trigger's list endpoint for one practice. ``since`` starts from that ISO
    8601 instant instead of "from now" (only while no cursor is stored); ``today`` gives
    the UTC date of ``date_range`` windows (tests fake it)."""

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
        self.name = self.member.name
        self.shared = SharedPoll(client, [self.member], today=today)

    def poll_once(self) -> PollResult:
        """Poll once: store the new events, then move the cursor (as
        :meth:`SharedPoll.poll_once`)."""
        return self.shared.poll_once().results[self.name]
