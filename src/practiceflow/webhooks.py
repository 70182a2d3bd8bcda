"""Verify the signed webhook deliveries of the Partner API (spec section 6), on its own.

Anyone who receives deliveries can use this module without the rest of practiceflow::

    from practiceflow.webhooks import verify, WebhookVerificationError

    try:
        delivery = verify(request.headers, raw_body, [current_secret, previous_secret])
    except WebhookVerificationError as exc:
        return 401, exc.reason          # never echo the body or a secret
    handle(delivery.event, delivery.event_id, delivery.payload)

The signature (``X-Svc-Signature``: ``sha256=`` + hex) is the HMAC-SHA256, keyed with the
``webhookSecret`` as UTF-8, of ``<timestamp>.<raw body bytes>``, checked in constant time on
the raw bytes. The event id is *not* signed: deduplicate on ``signature`` as well.

Replay window. The spec does not say whether a retry is signed again or how late it may come,
so a deduplicating receiver passes ``max_age`` no longer than its deduplication remembers (the
project's receiver: ``keep_seen - tolerance``). Within the window a delivery is accepted and
deduplicated by event id and signature; before it, it is refused as ``stale_timestamp``, since
no record could tell whether it ran. Nothing within the window is lost, nothing runs twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, TypeAlias

from practiceflow.errors import ErrorKind, PracticeflowError

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_HEADER",
    "EVENT_ID_HEADER",
    "SIGNATURE_HEADER",
    "SIGNATURE_PREFIX",
    "TIMESTAMP_HEADER",
    "HeadersLike",
    "RefusalReason",
    "VerifiedDelivery",
    "WebhookVerificationError",
    "delivery_headers",
    "sign",
    "verify",
]

EVENT_HEADER: Final = "X-Svc-Event"
EVENT_ID_HEADER: Final = "X-Svc-Event-Id"
TIMESTAMP_HEADER: Final = "X-Svc-Timestamp"
SIGNATURE_HEADER: Final = "X-Svc-Signature"
SIGNATURE_PREFIX: Final = "sha256="

#: Seconds a delivery's timestamp may differ from the receiver's clock, either way.
DEFAULT_TOLERANCE: Final = 300

_REQUIRED: Final = (EVENT_HEADER, EVENT_ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER)
_WANTED: Final = {name.lower(): name for name in _REQUIRED}
_WANTED_RAW: Final = {name.lower().encode("latin-1"): name for name in _REQUIRED}
_SIGNATURE: Final = re.compile(r"sha256=[0-9a-f]{64}")
# Unix seconds fit in far fewer digits; the cap keeps int() away from absurd inputs.
_MAX_TIMESTAMP_DIGITS: Final = 12

RefusalReason: TypeAlias = Literal[
    "missing_header",
    "duplicate_header",
    "bad_timestamp",
    "stale_timestamp",
    "future_timestamp",
    "bad_signature_format",
    "signature_mismatch",
    "no_secrets",
]

#: Headers as a mapping (dict, starlette ``Headers``, requests' ``CaseInsensitiveDict``)
#: or as a sequence of ``(name, value)`` pairs, as ASGI gives them (``str`` or ``bytes``).
HeadersLike: TypeAlias = Mapping[str, str] | Iterable[tuple[str | bytes, str | bytes]]


class WebhookVerificationError(PracticeflowError):
    """A delivery was refused: it is not proven to come from the API, or it is a replay.

    The message says which check failed and what would be valid; it never contains a
    secret or the body. Answer the sender with 401 (or 400) and do not process the body.

    Attributes:
        reason: machine-readable cause, one of :data:`RefusalReason`.
    """

    kind: ClassVar[ErrorKind] = "auth"

    def __init__(self, reason: RefusalReason, message: str) -> None:
        self.reason: RefusalReason = reason
        super().__init__(f"webhook delivery refused ({reason}): {message}")


@dataclass(frozen=True)
class VerifiedDelivery:
    """A delivery whose signature and timestamp checked out.

    Attributes:
        event: the event key (``X-Svc-Event``), such as ``proposal.accepted``.
        event_id: the delivery's idempotency key (``X-Svc-Event-Id``); not signed.
        timestamp: unix seconds the sender signed (``X-Svc-Timestamp``).
        body: the raw body bytes, exactly as received.
        payload: the body parsed as JSON, or the raw ``bytes`` when it is not JSON.
        payload_is_json: whether ``payload`` is parsed JSON.
        secret_index: position, in the ``secrets`` given to :func:`verify`, of the secret
            that matched (the secret itself is never kept).
        signature: the ``X-Svc-Signature`` value; dedupe on it as well as on
            ``event_id``, since the id is outside the HMAC.
    """

    event: str
    event_id: str
    timestamp: int
    # Body and payload may hold personal data: kept out of repr so they stay out of logs.
    body: bytes = field(repr=False)
    payload: Any = field(repr=False)
    payload_is_json: bool
    secret_index: int
    signature: str


def sign(secret: str, timestamp: int | str, raw_body: bytes | str) -> str:
    """Compute the ``X-Svc-Signature`` value the API would send.

    Meant for tests and for the sandbox, which signs its own deliveries.

    Args:
        secret: the subscription's ``webhookSecret``; encoded as UTF-8.
        timestamp: unix seconds, as sent in ``X-Svc-Timestamp``.
        raw_body: the exact body bytes (a ``str`` is encoded as UTF-8).

    Returns:
        ``"sha256="`` followed by 64 lowercase hex digits.
    """
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else raw_body
    message = str(timestamp).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def delivery_headers(
    secret: str,
    event: str,
    event_id: str,
    raw_body: bytes | str,
    *,
    timestamp: int | None = None,
) -> dict[str, str]:
    """Build the four headers of a signed delivery, as the API sends them.

    Args:
        secret: the subscription's ``webhookSecret``.
        event: the event key.
        event_id: the delivery's unique id.
        raw_body: the exact body that will be sent.
        timestamp: unix seconds to sign; the current time when omitted.

    Returns:
        A dict with ``X-Svc-Event``, ``X-Svc-Event-Id``, ``X-Svc-Timestamp`` and
        ``X-Svc-Signature``.
    """
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        EVENT_HEADER: event,
        EVENT_ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: sign(secret, stamp, raw_body),
    }


def verify(
    headers: HeadersLike,
    raw_body: bytes,
    secrets: str | Sequence[str],
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    now: float | None = None,
    max_age: float | None = None,
) -> VerifiedDelivery:
    """Check that a delivery comes from the API and is fresh, then return it parsed.

    Checks run in this order: secrets configured, headers present and single, timestamp
    and signature well-formed, signature matches one of the secrets, timestamp within
    ``tolerance`` of ``now``. The window is checked after the signature so that a
    ``stale_timestamp`` or ``future_timestamp`` refusal always concerns a genuine
    delivery (a clock or replay problem), never a forgery.

    Args:
        headers: the request headers; names are matched case-insensitively.
        raw_body: the body bytes exactly as received, before any parsing.
        secrets: the subscription's secret, or several during a rotation (the current
            and the previous one); empty strings are ignored.
        tolerance: seconds the timestamp may be away from ``now``, either way;
            a difference of exactly ``tolerance`` is accepted.
        now: the receiver's clock in unix seconds; ``time.time()`` when omitted.
        max_age: seconds a timestamp may lie in the past (the replay window, see the
            module docstring); ``tolerance`` when omitted. Only for receivers that
            deduplicate by event id and signature for at least this long.

    Returns:
        The verified delivery, with the index of the secret that matched.

    Raises:
        WebhookVerificationError: the delivery is refused; ``reason`` says why.
        ValueError: ``tolerance`` or ``max_age`` is negative (a mistake in the caller's
            code).
    """
    for name, value in (("tolerance", tolerance), ("max_age", max_age)):
        if value is not None and value < 0:
            message = f"{name} must be zero or more seconds; got {value!r}"
            raise ValueError(message)
    candidates = _usable_secrets(secrets)
    found = _pick_headers(headers)
    timestamp_text = found[TIMESTAMP_HEADER]
    timestamp = _parse_timestamp(timestamp_text)
    signature = found[SIGNATURE_HEADER]
    _check_signature_format(signature)

    secret_index = _match(candidates, timestamp_text, raw_body, signature)
    past = tolerance if max_age is None else max(max_age, tolerance)
    _check_window(timestamp, tolerance, time.time() if now is None else now, past)

    payload, is_json = _parse_body(raw_body)
    return VerifiedDelivery(
        event=found[EVENT_HEADER],
        event_id=found[EVENT_ID_HEADER],
        timestamp=timestamp,
        body=raw_body,
        payload=payload,
        payload_is_json=is_json,
        secret_index=secret_index,
        signature=signature,
    )


def _usable_secrets(secrets: str | Sequence[str]) -> list[tuple[int, str]]:
    # A lone str is a Sequence[str] of characters: treat it as one secret, not many.
    listed = [secrets] if isinstance(secrets, str) else list(secrets)
    usable = [(index, secret) for index, secret in enumerate(listed) if secret]
    if not usable:
        message = (
            f"no webhook secret is configured (got {len(listed)} empty or missing); "
            "give the webhookSecret returned when subscribing"
        )
        raise WebhookVerificationError("no_secrets", message)
    return usable


def _text(value: str | bytes) -> str:
    # HTTP header bytes are latin-1 by definition (RFC 9110); ASGI passes them raw.
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _pick_headers(headers: HeadersLike) -> dict[str, str]:
    pairs: Iterable[tuple[str | bytes, str | bytes]]
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    seen: dict[str, set[str]] = {name: set() for name in _REQUIRED}
    for raw_name, raw_value in pairs:
        # ASGI gives names as lowercase bytes: look those up as they are, others decoded.
        canonical = _WANTED_RAW.get(raw_name) if isinstance(raw_name, bytes) else None
        if canonical is None:
            canonical = _WANTED.get(_text(raw_name).strip().lower())
        if canonical is not None:
            seen[canonical].add(_text(raw_value).strip())

    missing = [name for name in _REQUIRED if not seen[name] or seen[name] == {""}]
    if missing:
        carried = ", ".join(_REQUIRED)
        message = f"missing or empty header(s) {', '.join(missing)}; a delivery carries {carried}"
        raise WebhookVerificationError("missing_header", message)
    doubled = [name for name in _REQUIRED if len(seen[name]) > 1]
    if doubled:
        message = (
            f"header(s) {', '.join(doubled)} given more than once with different values; "
            "a delivery carries each exactly once"
        )
        raise WebhookVerificationError("duplicate_header", message)
    return {name: next(iter(values)) for name, values in seen.items()}


def _parse_timestamp(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_TIMESTAMP_DIGITS:
        shown = text[:24] + ("..." if len(text) > 24 else "")
        message = (
            f"{TIMESTAMP_HEADER}: got {shown!r}; expected unix time in whole seconds "
            "(decimal digits only)"
        )
        raise WebhookVerificationError("bad_timestamp", message)
    return int(text)


def _check_signature_format(signature: str) -> None:
    if not _SIGNATURE.fullmatch(signature):
        scheme = signature.split("=", 1)[0] + "=" if "=" in signature else "(none)"
        message = (
            f"{SIGNATURE_HEADER}: got {len(signature)} characters with prefix "
            f"{scheme[:16]!r}; expected {SIGNATURE_PREFIX!r} followed by "
            "64 lowercase hex digits"
        )
        raise WebhookVerificationError("bad_signature_format", message)


def _match(
    candidates: list[tuple[int, str]], timestamp_text: str, raw_body: bytes, signature: str
) -> int:
    received = signature.encode("ascii")
    matched: int | None = None
    # Every candidate is checked, so the time taken does not tell which one matched.
    for index, secret in candidates:
        expected = sign(secret, timestamp_text, raw_body).encode("ascii")
        if hmac.compare_digest(expected, received) and matched is None:
            matched = index
    if matched is None:
        message = (
            f"{SIGNATURE_HEADER} does not match the body under any of the "
            f"{len(candidates)} configured secret(s); check that the secret is the "
            "webhookSecret returned when subscribing, and that the body is verified "
            "as raw bytes before any parsing or re-encoding"
        )
        raise WebhookVerificationError("signature_mismatch", message)
    return matched


def _check_window(timestamp: int, tolerance: float, now: float, past: float) -> None:
    skew = now - timestamp
    if skew > past:
        message = (
            f"{TIMESTAMP_HEADER} is {skew:.0f}s in the past, beyond the replay window of "
            f"{past:g}s; a replay, a long-delayed delivery, or a slow receiver clock"
        )
        raise WebhookVerificationError("stale_timestamp", message)
    if -skew > tolerance:
        message = (
            f"{TIMESTAMP_HEADER} is {-skew:.0f}s in the future, beyond the tolerance of "
            f"{tolerance:g}s; check the receiver's clock (NTP)"
        )
        raise WebhookVerificationError("future_timestamp", message)


def _parse_body(raw_body: bytes) -> tuple[Any, bool]:
    try:
        return json.loads(raw_body), True
    # JSONDecodeError and UnicodeDecodeError are ValueErrors; absurd nesting recurses.
    except (ValueError, RecursionError):
        return raw_body, False
