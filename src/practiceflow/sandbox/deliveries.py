"""Signed webhook deliveries (spec section 6; body, signature and retries guessed, GUESSES.md): a
non-2xx or unreachable receiver is retried after each of ``webhook_retry_delays`` (scaled), a
2xx ends the delivery for good. Only loopback URLs are contacted.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import itertools
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests

from practiceflow.sandbox.clock import SandboxClock, format_time
from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.variants import Variants

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: Seconds a ``first_attempt_late`` delivery's timestamp lies behind the clock: it plays a
#: retry arriving two hours after a first attempt signed then.
LATE_BY = 7200


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` is http(s) on 127.0.0.1, localhost or [::1] (all the sandbox calls)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_HOSTS


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Svc-Signature`` of a delivery: ``sha256=`` and the hex HMAC-SHA256, keyed with
    the subscription's ``webhookSecret``, of ``<X-Svc-Timestamp>.<raw body>``."""
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@dataclass
class Delivery:
    """One event on its way to one subscription."""

    delivery_id: int
    region: str
    subscription: dict[str, Any]
    event: str
    event_id: str
    body: bytes
    generation: int
    attempt: int = 0
    stamping: str = "resigned"
    first_timestamp: str | None = None


class DeliveryDispatcher:
    """Schedules delivery attempts on a background thread and logs each one."""

    def __init__(self, clock: SandboxClock, config: SandboxConfig) -> None:
        self.clock = clock
        self.delays = [delay * config.webhook_retry_scale for delay in config.webhook_retry_delays]
        self.timeout = config.webhook_timeout
        self._queue: list[tuple[float, int, Delivery]] = []
        self._cond = threading.Condition()
        self._counter = itertools.count(1)
        self._log: list[dict[str, Any]] = []
        self._generation = 0
        self._running = False
        self._inflight = 0
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._session = requests.Session()
        self._session.trust_env = False  # never route through a proxy: loopback only

    def start(self) -> None:
        """Start the scheduler thread (idempotent)."""
        with self._cond:
            if self._running:
                return
            self._running = True
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sandbox-webhook")
        self._thread = threading.Thread(target=self._loop, name="sandbox-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the scheduler and drop pending attempts."""
        with self._cond:
            self._running = False
            self._queue.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._session.close()

    def reset(self) -> None:
        """Forget pending attempts and the log (attempts in flight are not logged)."""
        with self._cond:
            self._generation += 1
            self._queue.clear()
            self._log.clear()

    def enqueue(
        self,
        region: str,
        subscription: dict[str, Any],
        event: str,
        event_id: str,
        data: dict[str, Any],
        variants: Variants,
        copies: int = 1,
    ) -> None:
        """Schedule ``copies`` deliveries of one event to one subscription, shaped and stamped
        as ``variants`` say (topics ``delivery_body``, ``retry_timestamp``)."""
        payload: dict[str, Any] = {
            "eventId": event_id,
            "event": event,
            "occurredAt": format_time(self.clock.now()),
            "webhookId": subscription["id"],
        }
        if variants.is_("delivery_body", "flat"):
            payload = {**data, **payload}
        else:
            payload["data"] = data
        body = json.dumps(payload, separators=(",", ":")).encode()
        with self._cond:
            for _ in range(max(1, copies)):
                delivery = Delivery(
                    delivery_id=next(self._counter),
                    region=region,
                    subscription=subscription,
                    event=event,
                    event_id=event_id,
                    body=body,
                    generation=self._generation,
                    stamping=variants.pick("retry_timestamp"),
                )
                heapq.heappush(self._queue, (time.monotonic(), delivery.delivery_id, delivery))
            self._cond.notify_all()

    def log(self) -> list[dict[str, Any]]:
        """Every attempt so far, oldest first (a copy)."""
        with self._cond:
            return list(self._log)

    def idle(self) -> bool:
        """True when nothing is queued or in flight."""
        with self._cond:
            return not self._queue and self._inflight == 0

    def _loop(self) -> None:
        while True:
            with self._cond:
                if not self._running:
                    return
                if not self._queue:
                    self._cond.wait(timeout=0.5)
                    continue
                due, _, delivery = self._queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(timeout=wait)
                    continue
                heapq.heappop(self._queue)
                self._inflight += 1
            assert self._pool is not None
            try:
                self._pool.submit(self._attempt, delivery)
            except RuntimeError:  # the pool is shutting down
                with self._cond:
                    self._inflight -= 1
                return

    def _attempt(self, delivery: Delivery) -> None:
        delivery.attempt += 1
        status: int | None = None
        error: str | None = None
        try:
            url, secret = delivery.subscription["url"], delivery.subscription["secret"]
            if not is_loopback_url(url):
                error = "refused: the sandbox only delivers to loopback URLs"
            else:
                timestamp = self._timestamp(delivery)
                headers = {
                    "Content-Type": "application/json",
                    "User-Agent": "practiceflow-sandbox-webhooks",
                    "X-Svc-Event": delivery.event,
                    "X-Svc-Event-Id": delivery.event_id,
                    "X-Svc-Timestamp": timestamp,
                    "X-Svc-Signature": sign(secret, timestamp, delivery.body),
                }
                response = self._session.post(
                    url,
                    data=delivery.body,
                    headers=headers,
                    timeout=self.timeout,
                    allow_redirects=False,
                )
                status = response.status_code
                response.close()
        except requests.RequestException as exc:
            error = type(exc).__name__
        except Exception:  # a bug must not kill the dispatcher
            logger.exception("webhook delivery %s failed unexpectedly", delivery.delivery_id)
            error = "internal error"
        ok = status is not None and 200 <= status < 300
        retryable = not ok and not (error or "").startswith("refused")
        retryable = retryable and delivery.attempt <= len(self.delays)
        retry_in = self.delays[delivery.attempt - 1] if retryable else None
        with self._cond:
            self._inflight -= 1
            if delivery.generation != self._generation:
                return
            self._log.append(
                {
                    "deliveryId": delivery.delivery_id,
                    "region": delivery.region,
                    "subscriptionId": delivery.subscription["id"],
                    "url": delivery.subscription["url"],
                    "event": delivery.event,
                    "eventId": delivery.event_id,
                    "attempt": delivery.attempt,
                    "status": status,
                    "error": error,
                    "ok": ok,
                    "willRetry": retry_in is not None,
                    "at": format_time(self.clock.now()),
                }
            )
            if retry_in is not None and self._running:
                due = time.monotonic() + retry_in
                heapq.heappush(self._queue, (due, delivery.delivery_id, delivery))
                self._cond.notify_all()

    def _timestamp(self, delivery: Delivery) -> str:
        """The ``X-Svc-Timestamp`` of this attempt (variant ``retry_timestamp``)."""
        if delivery.stamping == "resigned":
            return str(int(self.clock.now()))
        if delivery.first_timestamp is None:
            late = LATE_BY if delivery.stamping == "first_attempt_late" else 0
            delivery.first_timestamp = str(int(self.clock.now()) - late)
        return delivery.first_timestamp
