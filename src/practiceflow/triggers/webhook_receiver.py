"""The webhook receiver: a starlette app that verifies, dedupes and stores deliveries.

Each subscription has its own path, ``/hooks/<path_token>``. A delivery is answered 413 (body
over ``max_body``), 404 (unknown path; logged by token fingerprint), 401 (not verified), 503
(the store cannot take it: the sender retries), else 200 with ``X-Practiceflow-Stored`` and
``X-Practiceflow-Event-Key`` only once its event is stored, deduplicated by event key *and*
signature (the id is not signed). Work happens after the answer (docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from practiceflow.errors import ConfigError, StoreError
from practiceflow.service.netaddr import ThreadedServer
from practiceflow.state import DEFAULT_KEEP_SEEN, NewEvent, StateStore, SubscriptionRecord
from practiceflow.state.group_commit import GroupCommit
from practiceflow.triggers import tests_asked
from practiceflow.triggers.base import TriggerEvent, envelope, event_from_record
from practiceflow.triggers.definition import DELIVERY_PREFIX, WebhookSpec
from practiceflow.webhooks import (
    DEFAULT_TOLERANCE,
    VerifiedDelivery,
    WebhookVerificationError,
    verify,
)

logger = logging.getLogger("practiceflow.triggers.webhook_receiver")

#: Largest delivery body accepted by default (bytes).
DEFAULT_MAX_BODY: Final = 256 * 1024
#: Header of a 200 answer: ``true`` when the delivery was stored, ``false`` for a duplicate.
STORED_HEADER: Final = "X-Practiceflow-Stored"
#: Header of a 200 answer: the stored event's dedupe key.
KEY_HEADER: Final = "X-Practiceflow-Event-Key"
#: URL path under which every subscription's receiver path lives.
HOOKS_PREFIX: Final = "/hooks/"
_PURGE_EVERY: Final = 3600.0
#: What may hide a value JSON cannot hold: a constant, a long exponent or mantissa, or an
#: escaped surrogate. A match only means the body is read again, carefully.
_SUSPECT: Final = re.compile(rb"NaN|Infinity|[eE][+]?\d{3}|\d{309}|\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

#: Called with (practice, trigger, first refusal, when the store took writes again).
WindowHandler = Callable[[str, str, datetime, datetime], None]


@dataclass(frozen=True)
class Binding:
    """How the receiver maps deliveries of one trigger: its spec and options (``input``)."""

    spec: WebhookSpec
    options: Mapping[str, Any]


def fingerprint(token: str) -> str:
    """A short, non-reversible name for a path token, for logs."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:10]


def standard_json(body: bytes, parsed: Any) -> Any:
    """A JSON body (``parsed`` from ``body``) as values standard JSON can hold: ``NaN``,
    ``Infinity``, ``1e999`` kept as the sender's text, lone UTF-16 surrogates escaped (they
    cannot be written back as JSON or encrypted as UTF-8); ``parsed`` itself as a rule."""
    if not _SUSPECT.search(body):
        return parsed
    try:
        return _standard(json.loads(body, parse_constant=str, parse_float=_number))
    except RecursionError:  # nested deeper than this walk may go: kept as text
        return body.decode("utf-8", "backslashreplace")


def _number(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text


def _escaped(text: str) -> str:
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _standard(value: Any) -> Any:
    if isinstance(value, str):
        return _escaped(value)
    if isinstance(value, list):
        return [_standard(item) for item in value]
    if isinstance(value, dict):
        return {_escaped(key): _standard(item) for key, item in value.items()}
    return value


class RefusedWindows:
    """Deliveries refused (503) because the store could not take them: the sender may give
    up before it can, so the first refusal per (practice, trigger) opens a window that
    ``on_window`` lists as a gap needing attention once a later delivery is stored."""

    def __init__(self, on_window: WindowHandler) -> None:
        self._on_window = on_window
        self._open: dict[tuple[str, str], datetime] = {}
        self._lock = threading.Lock()

    def refused(self, practice: str, trigger: str, at: datetime) -> None:
        """Note a delivery of a trigger refused at ``at`` (the window's start, if first)."""
        with self._lock:
            self._open.setdefault((practice, trigger), at)

    @property
    def pending(self) -> bool:
        """Whether a window waits to be listed."""
        return bool(self._open)

    def close(self, at: datetime) -> None:
        """The store took a write at ``at``: list every open window, ending then. A window
        whose listing fails stays open for the next time."""
        with self._lock:
            windows, self._open = self._open, {}
        for (practice, trigger), start in windows.items():
            try:
                self._on_window(practice, trigger, start, at)
            except Exception as exc:  # the store refused again: kept for the next commit
                logger.warning("refused deliveries of %s not listed yet: %s", trigger, exc)
                self.refused(practice, trigger, start)


@dataclass(frozen=True)
class _Accepted:
    """A verified, mapped delivery, ready to commit."""

    event: NewEvent
    delivery_id: str
    test: bool
    unrecognised: str | None = None


class Receiver:
    """Receives the deliveries of every subscription in ``store`` (starlette ``app``);
    ``keep_seen``: how long handled events stay deduplicated (at least the sender's retry span);
    ``on_stored``: called from the event loop (must not block) per new event."""

    def __init__(
        self,
        store: StateStore,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        tolerance: float = DEFAULT_TOLERANCE,
        keep_seen: timedelta = DEFAULT_KEEP_SEEN,
        clock: Callable[[], float] = time.time,
        on_stored: Callable[[], None] | None = None,
        on_refused_window: WindowHandler | None = None,
    ) -> None:
        if max_body < 1:
            message = f"max_body: got {max_body!r}; expected a positive number of bytes"
            raise ConfigError(message)
        if keep_seen < timedelta(days=7):
            logger.warning(
                "keep_seen of %s is shorter than 7 days; late redeliveries may repeat", keep_seen
            )
        self.store = store
        self.max_body = max_body
        self.tolerance = tolerance
        self.keep_seen = keep_seen
        #: How old a signed delivery may be (replay policy of practiceflow.webhooks):
        #: what deduplication remembers, less the clock tolerance.
        self.replay_window = max(tolerance, keep_seen.total_seconds() - tolerance)
        self._clock = clock
        self._on_stored = on_stored
        self._bindings: dict[tuple[str, str], Binding] = {}
        self._last_delivery: dict[tuple[str, str], float] = {}
        self._listeners: list[Callable[[TriggerEvent], None]] = []
        self._changed = threading.Condition()
        self._stored = 0
        self._last_purge = 0.0
        self._group = GroupCommit(store)
        self._refused = RefusedWindows(on_refused_window) if on_refused_window else None
        route = Route(HOOKS_PREFIX + "{token}", self._deliver, methods=["POST"])
        self.app = Starlette(routes=[route])

    def bind(self, practice: str, name: str, spec: WebhookSpec, options: Mapping[str, Any]) -> None:
        """Say how deliveries of a trigger are mapped (before its subscription exists); without
        a binding they are still stored, the body as the event and the delivery id as key."""
        self._bindings[(practice, name)] = Binding(spec, dict(options))

    def listen(self, callback: Callable[[TriggerEvent], None]) -> None:
        """Call ``callback`` with each event after it is stored (from a worker thread)."""
        self._listeners.append(callback)

    def last_delivery(self, practice: str, name: str) -> float | None:
        """When (``clock`` seconds) a verified delivery last reached a trigger, if ever."""
        return self._last_delivery.get((practice, name))

    def wait_for_events(self, count: int, timeout: float) -> bool:
        """Block until this receiver has stored ``count`` events in all; ``True`` if so."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._stored < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    async def _deliver(self, request: Request) -> Response:
        answer = await self._receive(request)
        if isinstance(answer, Response):
            return answer
        try:
            stored = await self._group.record(answer.event)
        except StoreError as exc:
            if self._refused is not None:
                self._refused.refused(answer.event.practice, answer.event.source, self.store.now())
            return self._unavailable(exc)
        if self._refused is not None and self._refused.pending:
            await run_in_threadpool(self._refused.close, self.store.now())
        if answer.test or self._listeners or self._purge_due():
            # Blocking follow-ups (store writes, listeners) run off the event loop.
            await run_in_threadpool(self._after, answer, stored)
        else:
            self._note(answer, stored)
        # No body: the answer is its status and headers (stored or not, the event's key),
        # so the sender's connection carries one write.
        return Response(
            status_code=200,
            headers={
                STORED_HEADER: "true" if stored else "false",
                KEY_HEADER: answer.event.event_id,
            },
        )

    def close(self) -> None:
        """Stop the group commit's writer thread (a later delivery starts a new one)."""
        self._group.close()

    async def _receive(self, request: Request) -> _Accepted | Response:
        """Read, look up, verify and map a delivery; a refusal is a response."""
        token = str(request.path_params["token"])
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            return self._too_large()
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in request.stream():  # counted while read: no length is trusted
                size += len(chunk)
                if size > self.max_body:
                    return self._too_large()
                chunks.append(chunk)
        except ClientDisconnect:
            return Response(status_code=400)
        body = b"".join(chunks)
        try:
            if self.store.local_reads:
                return self._accept(token, request.headers.raw, body)
            # A read over the network (PostgreSQL) must not block the event loop.
            return await run_in_threadpool(self._accept, token, request.headers.raw, body)
        except StoreError as exc:
            return self._unavailable(exc)

    def _accept(
        self, token: str, raw_headers: list[tuple[bytes, bytes]], body: bytes
    ) -> _Accepted | Response:
        """Look the path up, verify the delivery and map it; a refusal is a response."""
        checked = self._verified(token, raw_headers, body)
        if isinstance(checked, Response):
            return checked
        subscription, delivery = checked
        headers = {
            "event": delivery.event,
            "eventId": delivery.event_id,
            "timestamp": str(delivery.timestamp),
        }
        payload = (
            standard_json(body, delivery.payload)  # NaN, 1e999, lone surrogates kept as text
            if delivery.payload_is_json
            else body.decode("utf-8", "replace")
        )
        practice, name = subscription.practice, subscription.trigger_key
        binding = self._bindings.get((practice, name))
        delivery_id = delivery.event_id
        if binding is None:
            key, data = DELIVERY_PREFIX + delivery_id, payload
        else:
            key, data = binding.spec.to_event(payload, headers, binding.options, delivery_id)
        # A trigger with a record key that found none could not map the delivery.
        mapped = binding is None or binding.spec.id is None or key != DELIVERY_PREFIX + delivery_id
        health = self.store.subscription_health(practice, name)
        test, unrecognised = tests_asked.classify(
            health, self.store.now(), delivery_id, payload, mapped
        )
        if unrecognised is not None:
            held = (delivery_id, practice, name, unrecognised)
            logger.warning("delivery %s for %s/%s held as unrecognised: %s", *held)
        stored_payload = envelope(
            "webhook",
            data,
            payload,
            event=delivery.event,
            delivery_id=delivery_id,
            test=test,
            unrecognised=unrecognised,
        )
        event_key = delivery.event or subscription.event
        event = NewEvent(practice, name, event_key, key, stored_payload, delivery.signature)
        return _Accepted(event, delivery_id, test, unrecognised)

    def _verified(
        self, token: str, raw_headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[SubscriptionRecord, VerifiedDelivery] | Response:
        """The path's subscription and the delivery verified with its secret, or a refusal.
        Read per delivery: a copy kept longer would accept a replaced secret or deleted path."""
        subscription = self.store.find_subscription_by_path(token)
        if subscription is None:
            logger.warning("delivery to unknown receiver path %s refused", fingerprint(token))
            return self._refuse(404, "unknown_path", "no subscription uses this path")
        try:
            window = self.replay_window
            secrets = [subscription.secret]
            delivery = verify(
                raw_headers, body, secrets, self.tolerance, now=self._clock(), max_age=window
            )
        except WebhookVerificationError as exc:
            where = f"{subscription.practice}/{subscription.trigger_key}"
            logger.warning("delivery for %s refused: %s", where, exc.reason)
            return self._refuse(401, exc.reason, str(exc))
        return subscription, delivery

    def _note(self, accepted: _Accepted, stored: bool) -> None:
        """Count a committed delivery, wake the runner and :meth:`wait_for_events`."""
        practice, name = accepted.event.practice, accepted.event.source
        self._last_delivery[(practice, name)] = self._clock()
        if stored and self._on_stored is not None:
            self._on_stored()
        if stored:
            with self._changed:
                self._stored += 1
                self._changed.notify_all()

    def _after(self, accepted: _Accepted, stored: bool) -> None:
        """Follow-ups of a committed delivery that block: test mark, listeners, purge."""
        practice, name = accepted.event.practice, accepted.event.source
        try:
            if accepted.unrecognised is not None and stored:  # before the test is marked
                key, reason = accepted.event.event_id, accepted.unrecognised
                tests_asked.hold(self.store, practice, name, key, accepted.delivery_id, reason)
            if accepted.test:
                self.store.record_test_delivery(practice, name)
                tests_asked.arrived(self.store, practice, name)
        except StoreError as exc:  # the event is stored: answer 200 regardless
            logger.warning("test delivery of %s/%s not noted: %s", practice, name, exc)
        self._note(accepted, stored)
        if stored:
            self._announce(practice, name, accepted.event.event_id)
        self._maybe_purge()

    def _refuse(self, status: int, reason: str, detail: str) -> Response:
        return JSONResponse({"status": status, "reason": reason, "detail": detail}, status)

    def _too_large(self) -> Response:
        return self._refuse(413, "body_too_large", f"larger than {self.max_body} bytes")

    def _unavailable(self, exc: StoreError) -> Response:
        # Nothing was stored: refuse with a status the sender retries, and say why.
        logger.warning("delivery not stored, the sender will retry it: %s", exc)
        return self._refuse(503, "store_unavailable", "the event could not be stored")

    def _announce(self, practice: str, name: str, key: str) -> None:
        if not self._listeners:
            return
        record = self.store.get_event(practice, name, key)
        if record is None:  # pragma: no cover - stored in this very call
            return
        event = event_from_record(record)
        for callback in self._listeners:
            try:
                callback(event)
            except Exception:  # a listener's bug must not fail a stored delivery
                logger.exception("event listener failed for %s/%s", practice, name)

    def _purge_due(self) -> bool:
        return self._clock() - self._last_purge >= _PURGE_EVERY

    def _maybe_purge(self) -> None:
        if not self._purge_due():
            return
        self._last_purge = self._clock()
        try:
            self.store.purge_seen(self.keep_seen)
        except StoreError as exc:  # purging is housekeeping: say why, try again later
            logger.warning("purging seen events failed: %s", exc)
        except Exception:  # a failure must not refuse a delivery
            logger.exception("purging seen events failed")


class ReceiverServer(ThreadedServer):
    """A :class:`Receiver` served by uvicorn in a daemon thread; ``sock``: a socket already
    listening (bound early, see practiceflow.service.netaddr.claim); port ``0``: see ``.port``."""

    def __init__(
        self, receiver: Receiver, host: str, port: int, sock: socket.socket | None = None
    ) -> None:
        super().__init__(receiver.app, host, port, "pf-receiver")
        self.receiver = receiver
        self._sockets = None if sock is None else [sock]

    def _run(self) -> None:
        self._server.run(self._sockets)

    @property
    def url(self) -> str:
        """The base URL, such as ``http://127.0.0.1:8081``."""
        return self.root

    def start(self, timeout: float = 5.0) -> ReceiverServer:
        """Start serving and wait until the socket listens (ConfigError: not in ``timeout``)."""
        if not self.serve(timeout):
            message = f"webhook receiver on {self.host}:{self.port} did not start"
            raise ConfigError(message)
        return self

    def stop(self) -> None:
        """Stop serving (deliveries in flight finish first), then the group commit's writer."""
        super().stop()
        self.receiver.close()


@contextmanager
def serve_receiver(
    receiver: Receiver, host: str = "127.0.0.1", port: int = 0
) -> Iterator[ReceiverServer]:
    """Serve a receiver for a ``with`` block; ``port`` ``0`` picks a free one (``.port``)."""
    server = ReceiverServer(receiver, host, port).start()
    try:
        yield server
    finally:
        server.stop()
