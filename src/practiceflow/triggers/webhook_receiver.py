"""The webhook receiver: a starlette app that verifies, dedupes and stores deliveries.

Each subscription has its own path, ``/hooks/<path_token>``. For every delivery, in order:

1. body over ``max_body`` (counted while reading): **413**;
2. unknown path: **404** (logged with a token fingerprint, never the token);
3. :func:`practiceflow.webhooks.verify` fails: **401** with the reason;
4. tell test and unmappable deliveries apart (:mod:`.tests_asked`), map the body and store
   it durably, deduplicated by event key *and* signature (the id is not signed); store
   unusable (:class:`StoreError`): **503** so the sender retries;
5. only then **200**, with ``X-Practiceflow-Stored: true`` (``false`` for a duplicate) and
   ``X-Practiceflow-Event-Key``.

Nothing unverified is stored, and work happens after the answer (the runner reads pending
events). Handled events are purged after ``keep_seen``.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from practiceflow.errors import ConfigError, StoreError
from practiceflow.state import DEFAULT_KEEP_SEEN, NewEvent, StateStore, SubscriptionRecord
from practiceflow.state.group_commit import GroupCommit
from practiceflow.triggers import tests_asked
from practiceflow.triggers.any_json import standard_json
from practiceflow.triggers.base import TriggerEvent, envelope, event_from_record
from practiceflow.triggers.definition import DELIVERY_PREFIX, WebhookSpec
from practiceflow.triggers.refused_windows import RefusedWindows, WindowHandler
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


@dataclass(frozen=True)
class Binding:
    """What the receiver needs to map deliveries of one trigger.

    Attributes:
        spec: the trigger's webhook spec.
        options: the trigger's options (``input`` of its templates).
    """

    spec: WebhookSpec
    options: Mapping[str, Any]


def fingerprint(token: str) -> str:
    """A short, non-reversible name for a path token, for logs."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:10]


class _TooLarge(Exception):
    pass


@dataclass(frozen=True)
class _Accepted:
    """A verified, mapped delivery, ready to commit."""

    event: NewEvent
    delivery_id: str
    test: bool
    unrecognised: str | None = None


class Receiver:
    """Receives the deliveries of every subscription kept in a state store.

    Args:
        store: the state store holding subscriptions (path token, secret) and events.
        max_body: largest body accepted, in bytes (413 beyond).
        tolerance: seconds a delivery's timestamp may be off (replay window).
        keep_seen: how long handled events stay deduplicated (at least the sender's
            retry span; 7 days by default).
        clock: Unix time for the replay window (tests pass a fake).
        on_stored: called (from the event loop; it must not block) each time a new event
            is stored: ``serve`` wakes its runner this way.
        on_refused_window: lists a window of deliveries refused because the store could
            not take them, once it can again (:mod:`.refused_windows`); None: not listed.

    Attributes:
        app: the starlette application.
    """

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
        self.app = Starlette(
            routes=[Route(HOOKS_PREFIX + "{token}", self._deliver, methods=["POST"])]
        )

    # -- configuration ------------------------------------------------------------------

    def bind(self, practice: str, name: str, spec: WebhookSpec, options: Mapping[str, Any]) -> None:
        """Say how deliveries of a trigger are mapped (before its subscription exists).

        Deliveries of a stored subscription with no binding are still verified and stored,
        with the body as the event and the delivery id as the key.
        """
        self._bindings[(practice, name)] = Binding(spec, dict(options))

    def listen(self, callback: Callable[[TriggerEvent], None]) -> None:
        """Call ``callback`` with each event after it is stored (from a worker thread)."""
        self._listeners.append(callback)

    def last_delivery(self, practice: str, name: str) -> float | None:
        """When (``clock`` seconds) a verified delivery last reached a trigger, if ever."""
        return self._last_delivery.get((practice, name))

    @property
    def stored(self) -> int:
        """How many new events this receiver stored."""
        return self._stored

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

    # -- the endpoint -------------------------------------------------------------------

    async def _deliver(self, request: Request) -> Response:
        answer = await self._receive(request)
        if isinstance(answer, Response):
            return answer
        try:
            stored = await self._group.record(answer.event)
        except StoreError as exc:
            # Nothing was stored: refuse with a status the sender retries, and say why.
            logger.warning("delivery not stored, the sender will retry it: %s", exc)
            if self._refused is not None:
                self._refused.refused(answer.event.practice, answer.event.source, self.store.now())
            return self._refuse(503, "store_unavailable", "the event could not be stored")
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
        """Read, look up, verify and map a delivery; a refusal is a response.

        Runs on the event loop when the store's reads are local (SQLite), else in a thread.
        """
        token = str(request.path_params["token"])
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            return self._refuse(413, "body_too_large", f"larger than {self.max_body} bytes")
        try:
            body = await self._read(request)
        except _TooLarge:
            return self._refuse(413, "body_too_large", f"larger than {self.max_body} bytes")
        except ClientDisconnect:
            return Response(status_code=400)
        try:
            if self.store.local_reads:
                return self._accept(token, request.headers.raw, body)
            # A read over the network (PostgreSQL) must not block the event loop.
            return await run_in_threadpool(self._accept, token, request.headers.raw, body)
        except StoreError as exc:
            logger.warning("delivery not stored, the sender will retry it: %s", exc)
            return self._refuse(503, "store_unavailable", "the event could not be stored")

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
            logger.warning(
                "delivery %s for %s/%s held as unrecognised: %s",
                delivery_id,
                practice,
                name,
                unrecognised,
            )
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

        The subscription is read for every delivery (an indexed read): a copy kept longer
        would go on accepting a replaced secret, or a deleted path.
        """
        subscription = self.store.find_subscription_by_path(token)
        if subscription is None:
            logger.warning("delivery to unknown receiver path %s refused", fingerprint(token))
            return self._refuse(404, "unknown_path", "no subscription uses this path")
        try:
            now = self._clock()
            delivery = verify(
                raw_headers,
                body,
                [subscription.secret],
                self.tolerance,
                now=now,
                max_age=self.replay_window,
            )
        except WebhookVerificationError as exc:
            logger.warning(
                "delivery for %s/%s refused: %s",
                subscription.practice,
                subscription.trigger_key,
                exc.reason,
            )
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
                event_key = accepted.event.event_id
                tests_asked.hold(
                    self.store,
                    practice,
                    name,
                    event_key,
                    accepted.delivery_id,
                    accepted.unrecognised,
                )
            if accepted.test:
                self.store.record_test_delivery(practice, name)
                tests_asked.arrived(self.store, practice, name)
        except StoreError as exc:  # the event is stored: answer 200 regardless
            logger.warning("test delivery of %s/%s not noted: %s", practice, name, exc)
        self._note(accepted, stored)
        if stored:
            self._announce(practice, name, accepted.event.event_id)
        self._maybe_purge()

    async def _read(self, request: Request) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise _TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    def _refuse(self, status: int, reason: str, detail: str) -> Response:
        return JSONResponse({"status": status, "reason": reason, "detail": detail}, status)

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


class ReceiverServer:
    """A :class:`Receiver` served by uvicorn in a background thread.

    Attributes:
        receiver: the receiver.
        host: the address it listens on.
        port: the port (chosen when ``0`` was asked).
    """

    def __init__(
        self, receiver: Receiver, host: str, port: int, sock: socket.socket | None = None
    ) -> None:
        self.receiver = receiver
        self.host = host
        config = uvicorn.Config(
            receiver.app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        # ``sock``: a socket already listening (bound early by practiceflow.service.netaddr.claim).
        sockets = None if sock is None else [sock]
        self._thread = threading.Thread(
            target=self._server.run, args=(sockets,), name="pf-receiver", daemon=True
        )
        self.port = port

    @property
    def url(self) -> str:
        """The base URL, such as ``http://127.0.0.1:8081``."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 5.0) -> ReceiverServer:
        """Start serving and wait until the socket listens.

        Raises:
            ConfigError: the server did not start within ``timeout``.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                message = f"webhook receiver on {self.host}:{self.port} did not start"
                raise ConfigError(message)
            time.sleep(0.01)
        servers = getattr(self._server, "servers", [])
        for server in servers:
            for sock in server.sockets:
                self.port = int(sock.getsockname()[1])
                break
        return self

    def stop(self) -> None:
        """Stop serving (deliveries in flight finish first)."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self.receiver.close()


@contextmanager
def serve_receiver(
    receiver: Receiver, host: str = "127.0.0.1", port: int = 0
) -> Iterator[ReceiverServer]:
    """Serve a receiver for the duration of a ``with`` block.

    Args:
        receiver: the receiver.
        host: the address to listen on.
        port: the port; ``0`` picks a free one (read it from ``.port``).

    Yields:
        The running server.
    """
    server = ReceiverServer(receiver, host, port).start()
    try:
        yield server
    finally:
        server.stop()
