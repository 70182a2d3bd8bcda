"""A practice's polls: its triggers grouped into shared polls, each on an adaptive cadence
tied to the others'. Nothing here starts a thread: callers wait with
:meth:`ScheduledPoll.wait_due` or schedule from :meth:`PracticePolls.next_due`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from practiceflow.triggers.cadence import Cadence, PollNeed, PracticeCadence, group_cadence
from practiceflow.triggers.poll_member import PollMember, PollResult
from practiceflow.triggers.shared_poll import SharedPoll, SharedPollResult, group_members


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


@dataclass(frozen=True)
class PollTarget:
    """One polled trigger of a practice: its side of the read, how fast it must be polled,
    and what to call with its result after each poll (a ``both`` trigger's webhook check)."""

    member: PollMember
    need: PollNeed
    after: Callable[[PollResult], object] | None = None


class ScheduledPoll:
    """One shared poll of a practice (``targets`` read the same list) with its cadence,
    added to the practice's cadences."""

    def __init__(
        self,
        client: object,
        targets: Sequence[PollTarget],
        practice: PracticeCadence,
        *,
        clock: Callable[[], float] = time.monotonic,
        today: Callable[[], date] | None = None,
    ) -> None:
        self.targets = list(targets)
        self.shared = SharedPoll(client, [target.member for target in self.targets], today=today)
        self.name = "+".join(self.names)
        self._clock = clock
        self.cadence: Cadence = group_cadence(
            [target.need for target in self.targets],
            clock=clock,
            stretch=lambda seconds: budget_interval(client, seconds),
        )
        self._practice = practice
        practice.add(self.name, self.cadence)

    @property
    def names(self) -> list[str]:
        """The names of the triggers it serves."""
        return [target.member.name for target in self.targets]

    def poll_once(self) -> SharedPollResult:
        """Poll now for every trigger of the group, then schedule the next poll (also when
        the poll raises, as after a poll that found nothing)."""
        try:
            result = self.shared.poll_once()
        except Exception:
            self._practice.polled(self.name, changed=False)
            raise
        for target in self.targets:
            if target.after is not None:
                target.after(result.results[target.member.name])
        self._practice.polled(self.name, changed=result.changed)
        return result

    def lateness(self) -> float:
        """Seconds since the poll was due (0 when it is not due yet)."""
        return max(0.0, self._clock() - self.cadence.due)

    def wait_due(self, stop: threading.Event) -> bool:
        """Block until the poll is due (True) or ``stop`` is set (False; wake a waiter at
        once with :meth:`PracticePolls.wake_all`)."""
        while True:
            # Cleared before looking: a nudge (or a stop's wake) from here on ends the wait.
            self.cadence.nudged.clear()
            if stop.is_set():
                return False
            wait = self.cadence.wait()
            if wait <= 0:
                return True
            self.cadence.nudged.wait(wait)


class PracticePolls:
    """Every poll of one practice, grouped by list, on cadences tied together."""

    def __init__(
        self,
        client: object,
        targets: Sequence[PollTarget],
        *,
        clock: Callable[[], float] = time.monotonic,
        today: Callable[[], date] | None = None,
    ) -> None:
        self.cadence = PracticeCadence()
        by_member = {id(target.member): target for target in targets}
        self.groups = [
            ScheduledPoll(
                client,
                [by_member[id(member)] for member in members],
                self.cadence,
                clock=clock,
                today=today,
            )
            for members in group_members(target.member for target in targets)
        ]

    def wake_all(self) -> None:
        """Wake every :meth:`ScheduledPoll.wait_due` (to stop)."""
        for group in self.groups:
            group.cadence.nudged.set()

    def next_due(self) -> tuple[ScheduledPoll, float] | None:
        """The poll due first and the seconds until it is due, or ``None`` without polls."""
        found = self.cadence.next_due()
        if found is None:
            return None
        name, wait = found
        return next(group for group in self.groups if group.name == name), wait
