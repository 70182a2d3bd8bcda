"""The whole sandbox state: the practices of every region, seeded lazily on first use (starting
and resetting are instant even at 100,000 entities), and the runtime machinery: rate windows
aligned to the sandbox clock (moving it renews budgets; a refused request spends none), faults,
logs, the webhook dispatcher.
"""

from __future__ import annotations

import math
import random
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import pydantic

from practiceflow.sandbox.clock import SandboxClock, format_time
from practiceflow.sandbox.config import (
    CLIENT_KINDS,
    REGIONS,
    ClientKind,
    Credential,
    RateLimits,
    SandboxConfig,
    practice_credential,
)
from practiceflow.sandbox.deliveries import DeliveryDispatcher
from practiceflow.sandbox.seed import build_practice
from practiceflow.sandbox.store import Practice

#: Webhook event keys served by ``GET /api/v1/webhooks/events``; all but the first two
#: are guesses (GUESSES.md).
EVENTS: dict[str, str] = {
    "proposal.accepted": "A proposal was accepted by the client.",
    "eform.submitted": "A sent eForm was submitted by its recipient.",
    "client.created": "A client (Active entity) was created or a lead was converted.",
    "lead.created": "A lead was created.",
    "onboarding.completed": "An onboarding job was completed.",
}


class SandboxState:
    """Practices, clock, rate limiter, faults, logs and the webhook dispatcher; ``config``
    is the options in force (the admin surface changes some), ``initial_config`` those
    ``reset`` restores."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.initial_config = config
        self.clock = SandboxClock()
        self.faults = FaultBoard()
        self.limiter = RateLimiter(config.rate_limits, self.clock)
        self.dispatcher = DeliveryDispatcher(self.clock, config)
        self.duplicate_deliveries = 1
        self.variants = config.variants
        self._lock = threading.RLock()
        self._practices: dict[tuple[int, str], Practice] = {}
        self._requests: deque[dict[str, Any]] = deque(maxlen=20_000)
        self.generation = 0
        self.credentials: dict[str, dict[ClientKind, Credential]] = {
            region: config.credentials(region) for region in REGIONS
        }
        # Every API client by Client ID, with its region and practice (``--practices N``).
        self.clients: dict[str, tuple[str, int, Credential]] = {}
        for number in range(config.practices):
            for region in REGIONS:
                for kind in CLIENT_KINDS:
                    credential = practice_credential(number, region, kind)
                    if number == 0:
                        credential = self.credentials[region][kind]
                    self.clients[credential.client_id] = (region, number, credential)

    def practice(self, region: str, number: int = 0) -> Practice:
        """Practice ``number`` (0 unless ``--practices``) of ``region``, seeded on first use."""
        key = (number, region)
        practice = self._practices.get(key)
        if practice is None:
            with self._lock:
                practice = self._practices.get(key)
                if practice is None:
                    practice = build_practice(self.config, region, self.clock, number)
                    self._practices[key] = practice
        return practice

    def reset(self, seed: int | None = None, entities: int | None = None) -> None:
        """Return data, clock, faults, budgets, logs and switches to the options the sandbox
        started with; ``seed`` and ``entities`` replace those until the next reset."""
        with self._lock:
            config = self.initial_config
            if seed is not None:
                config = replace(config, seed=seed)
            if entities is not None:
                config = replace(config, entities=entities)
            self.config = config
            self._practices = {}
            self.clock.offset = 0.0
            self.faults.clear()
            self.limiter = RateLimiter(config.rate_limits, self.clock)
            self.dispatcher.reset()
            self.duplicate_deliveries = 1
            self.variants = config.variants
            self._requests.clear()
            self.generation += 1

    def answer_delay(self) -> float:
        """Seconds to hold the next API answer back: latency plus a random share of jitter."""
        config = self.config
        if not config.jitter:
            return config.latency
        return config.latency + random.uniform(0, config.jitter)  # noqa: S311 - not security

    def log_request(self, row: dict[str, Any], generation: int) -> None:
        """Record one API request, unless a reset came since it arrived (``generation``)."""
        if generation == self.generation:
            self._requests.append(row)

    def request_log(self) -> list[dict[str, Any]]:
        """Every API request received since the last reset, oldest first."""
        return list(self._requests)

    def emit(self, practice: Practice, event: str, data: dict[str, Any]) -> str:
        """Deliver ``event`` to every subscription of ``practice`` for it; returns the event id."""
        event_id = practice.new_uuid()
        for subscription in list(practice.subscriptions.values()):
            if subscription["event"] == event:
                region, copies = practice.region, self.duplicate_deliveries
                self.dispatcher.enqueue(
                    region, subscription, event, event_id, data, self.variants, copies
                )
        return event_id

    def now_text(self) -> str:
        """The sandbox clock as ISO 8601 text."""
        return format_time(self.clock.now())


@dataclass(frozen=True)
class RateDecision:
    """One request against the budget: a window's limit, remaining, reset and retry wait."""

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


#: Accepted names of each kind (the canonical name first).
FAULT_KINDS: dict[str, str] = {
    "rate_limit": "rate_limit",
    "429": "rate_limit",
    "server_error": "server_error",
    "500": "server_error",
    "slow": "slow",
    "drop": "drop",
}


class Fault(pydantic.BaseModel):
    """One armed fault for ``remaining`` more requests matching every condition given
    (``path_prefix`` with or without the region); ``retry_after`` is an injected 429's
    ``Retry-After`` (none when ``None``); ``delay`` holds a ``slow`` answer back. The admin
    surface validates it by the JSON names (``count``, ``pathPrefix``, ``retryAfter``)."""

    kind: str
    remaining: int = pydantic.Field(1, ge=1, le=100_000, alias="count")
    method: str | None = None
    path_prefix: str | None = pydantic.Field(None, alias="pathPrefix")
    region: str | None = None
    retry_after: int | None = pydantic.Field(None, ge=0, alias="retryAfter")
    delay: float = pydantic.Field(0.0, ge=0, le=120)

    def matches(self, method: str, region: str, path: str) -> bool:
        """Whether this fault applies to a request (``path`` without the region prefix)."""
        if self.method and self.method.upper() != method:
            return False
        if self.region and self.region != region:
            return False
        if self.path_prefix:
            full = f"/{region}{path}"
            return path.startswith(self.path_prefix) or full.startswith(self.path_prefix)
        return True


class FaultBoard:
    """The armed faults, consumed in the order they were added."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        """Arm a fault (its ``kind`` canonical)."""
        with self._lock:
            self._faults.append(fault)

    def take(self, method: str, region: str, path: str) -> Fault | None:
        """Consume one use of the first fault matching a request, if any."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, region, path):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def clear(self) -> None:
        """Disarm every fault."""
        with self._lock:
            self._faults.clear()

    def describe(self) -> list[dict[str, Any]]:
        """The armed faults as JSON-ready rows."""
        with self._lock:
            return [fault.model_dump() for fault in self._faults]
