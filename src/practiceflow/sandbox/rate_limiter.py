"""Per-Client-ID rate limits in three fixed windows of the sandbox clock.

Windows are aligned to the clock (each minute, hour and UTC day starts a new budget), so
``X-RateLimit-Reset`` (seconds until the tightest window renews; a guess, see GUESSES.md)
is exact and moving the sandbox clock forward renews budgets. Only authenticated requests
count; a refused (429) request does not spend budget.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from practiceflow.sandbox.clock import SandboxClock
from practiceflow.sandbox.config import RateLimits


@dataclass(frozen=True)
class RateDecision:
    """Outcome of one request against the budget: the reported window's limit, requests
    left in it, whole seconds until it renews, and seconds to wait when refused (else 0)."""

    allowed: bool
    limit: int
    remaining: int
    reset: int
    retry_after: int

    def headers(self) -> dict[str, str]:
        """The ``X-RateLimit-*`` headers, plus ``Retry-After`` when refused."""
        values = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if not self.allowed:
            values["Retry-After"] = str(self.retry_after)
        return values


class RateLimiter:
    """Counts requests per Client ID in a minute, an hour and a day window."""

    def __init__(self, limits: RateLimits, clock: SandboxClock) -> None:
        self.limits = limits
        self._clock = clock
        self._windows = ((60, limits.per_minute), (3600, limits.per_hour), (86400, limits.per_day))
        self._counts: dict[str, dict[int, tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def hit(self, client_id: str) -> RateDecision:
        """Spend one request of ``client_id``'s budget if every window allows it."""
        now = self._clock.now()
        with self._lock:
            counts = self._counts.setdefault(client_id, {})
            current: list[tuple[int, int, int, float]] = []
            for size, limit in self._windows:
                start = int(now // size)
                window_start, used = counts.get(size, (start, 0))
                if window_start != start:
                    used = 0
                current.append((size, limit, used, (start + 1) * size - now))
                counts[size] = (start, used)
            exhausted = [row for row in current if row[2] >= row[1]]
            if exhausted:
                size, limit, _, left = max(exhausted, key=lambda row: row[3])
                wait = max(1, math.ceil(left))
                return RateDecision(False, limit, 0, wait, wait)
            for size, _limit, used, _left in current:
                counts[size] = (counts[size][0], used + 1)
            size, limit, used, left = min(current, key=lambda row: row[1] - row[2] - 1)
            return RateDecision(True, limit, limit - used - 1, max(1, math.ceil(left)), 0)
