"""The whole sandbox state: the practices of every region and the runtime machinery.

One :class:`SandboxState` backs one running sandbox. Practices are seeded lazily, on the
first request that reaches a region, so starting (and resetting) is instant even with
100,000 entities per region. ``reset`` returns everything to the configured seed.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from dataclasses import replace
from typing import Any

from practiceflow.sandbox.clock import SandboxClock, format_time
from practiceflow.sandbox.config import REGIONS, ClientKind, Credential, RateLimits, SandboxConfig
from practiceflow.sandbox.deliveries import DeliveryDispatcher
from practiceflow.sandbox.faults import FaultBoard
from practiceflow.sandbox.practices import extra_clients
from practiceflow.sandbox.rate_limiter import RateLimiter
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
        self.clients: dict[str, tuple[str, Credential]] = {
            credential.client_id: (region, credential)
            for region, kinds in self.credentials.items()
            for credential in kinds.values()
        }
        # Practices 1..N-1 (``--practices N``): a request's credentials choose its practice.
        self.practice_numbers: dict[str, int] = {}
        for client_id, (region, number, credential) in extra_clients(config).items():
            self.clients[client_id] = (region, credential)
            self.practice_numbers[client_id] = number

    def practice(self, region: str, number: int = 0) -> Practice:
        """Practice ``number`` (0, the usual one, to ``config.practices - 1``) of ``region``,
        seeded on first use."""
        key = (number, region)
        practice = self._practices.get(key)
        if practice is None:
            with self._lock:
                practice = self._practices.get(key)
                if practice is None:
                    practice = build_practice(self.config, region, self.clock, number)
                    self._practices[key] = practice
        return practice

    def practice_of(self, credential: Credential, region: str) -> Practice:
        """The practice whose client ``credential`` is (its records, subscriptions)."""
        return self.practice(region, self.practice_numbers.get(credential.client_id, 0))

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
            self.clock.set_offset(0.0)
            self.faults.clear()
            self.limiter = RateLimiter(config.rate_limits, self.clock)
            self.dispatcher.reset()
            self.duplicate_deliveries = 1
            self.variants = config.variants
            self._requests.clear()
            self.generation += 1

    def set_rate_limits(self, limits: RateLimits) -> None:
        """Replace the rate windows (budgets start afresh) until the next reset."""
        self.limiter = RateLimiter(limits, self.clock)

    def answer_delay(self) -> float:
        """Seconds to hold the next API answer back: the configured latency plus a
        random share of the jitter."""
        config = self.config
        if not config.jitter:
            return config.latency
        return config.latency + random.uniform(0, config.jitter)  # noqa: S311 - not security

    def log_request(self, row: dict[str, Any], generation: int) -> None:
        """Record one API request; ``generation`` is :attr:`generation` when it arrived (a
        request that straddles a reset is not logged into the new run)."""
        if generation == self.generation:
            self._requests.append(row)

    def request_log(self) -> list[dict[str, Any]]:
        """Every API request received since the last reset, oldest first."""
        return list(self._requests)

    def emit(self, practice: Practice, event: str, data: dict[str, Any]) -> str:
        """Deliver ``event`` with ``data`` to every subscription of ``practice`` for it;
        returns the event id (the same for every subscription and copy)."""
        event_id = practice.new_uuid()
        for subscription in list(practice.subscriptions.values()):
            if subscription["event"] == event:
                self.dispatcher.enqueue(
                    practice.region,
                    subscription,
                    event,
                    event_id,
                    data,
                    copies=self.duplicate_deliveries,
                    **self.delivery_options(),
                )
        return event_id

    def delivery_options(self) -> dict[str, Any]:
        """How deliveries are shaped and stamped under the variants in force."""
        return {
            "flat": self.variants.is_("delivery_body", "flat"),
            "stamping": self.variants.pick("retry_timestamp"),
        }

    def now_text(self) -> str:
        """The sandbox clock as ISO 8601 text."""
        return format_time(self.clock.now())
