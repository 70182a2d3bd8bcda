"""Webhook signature verification (spec section 6).

Expected signatures come from ``openssl dgst -sha256 -hmac``, not from the code under test,
so a shared misreading of the spec cannot make both sides agree.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
from starlette.datastructures import Headers

from practiceflow.errors import PracticeflowError
from practiceflow.webhooks import (
    VerifiedDelivery,
    WebhookVerificationError,
    delivery_headers,
    sign,
    verify,
)

SECRET = "whsec_test_0123456789"
OLD_SECRET = "whsec_old_secret_abcdef"
NOW = 1_700_000_000
EVENT = "proposal.accepted"
EVENT_ID = "evt-0001"

requires_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def openssl_signature(secret: str, timestamp: str, body: bytes) -> str:
    """The signature as openssl computes it over ``<timestamp>.<body>``."""
    done = subprocess.run(  # noqa: S603 -- fixed argv, no shell; the key is test data.
        ["openssl", "dgst", "-sha256", "-hmac", secret],  # noqa: S607 -- openssl from PATH.
        input=timestamp.encode("ascii") + b"." + body,
        capture_output=True,
        check=True,
    )
    digest = done.stdout.decode("ascii").strip().rsplit("= ", 1)[1]
    return "sha256=" + digest


def headers_for(
    signature: str, timestamp: str = str(NOW), event: str = EVENT, event_id: str = EVENT_ID
) -> dict[str, str]:
    return {
        "X-Svc-Event": event,
        "X-Svc-Event-Id": event_id,
        "X-Svc-Timestamp": timestamp,
        "X-Svc-Signature": signature,
    }


def signed(body: bytes = b'{"a": 1}', timestamp: int = NOW) -> dict[str, str]:
    return headers_for(sign(SECRET, timestamp, body), str(timestamp))


VECTORS = [
    pytest.param(SECRET, b'{"event":"proposal.accepted","id":42}', id="json"),
    pytest.param(SECRET, '{"name":"Zoë Ångström","city":"Kraków 東京"}'.encode(), id="utf8-body"),
    pytest.param(SECRET, b"", id="empty-body"),
    pytest.param(SECRET, b'{"a": 1}\n  \t\r\n', id="trailing-whitespace"),
    pytest.param("sécret-ключ-鍵", b'{"a":1}', id="non-ascii-secret"),
    pytest.param(SECRET, b"not json at all \xff\xfe", id="binary-not-json"),
]


# --- independent vectors ---------------------------------------------------------------------


@requires_openssl
@pytest.mark.parametrize(("secret", "body"), VECTORS)
def test_sign_matches_openssl(secret: str, body: bytes) -> None:
    assert sign(secret, NOW, body) == openssl_signature(secret, str(NOW), body)


@requires_openssl
@pytest.mark.parametrize(("secret", "body"), VECTORS)
def test_verify_accepts_a_delivery_signed_by_openssl(secret: str, body: bytes) -> None:
    headers = headers_for(openssl_signature(secret, str(NOW), body))

    delivery = verify(headers, body, [secret], now=NOW)

    assert delivery.body == body
    assert delivery.event == EVENT
    assert delivery.event_id == EVENT_ID
    assert delivery.timestamp == NOW
    assert delivery.secret_index == 0
    assert delivery.signature == headers["X-Svc-Signature"]


def _flip_byte(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


@requires_openssl
@pytest.mark.parametrize(("secret", "body"), [v for v in VECTORS if v.values[1]])
def test_verify_rejects_any_one_byte_change_to_the_body(secret: str, body: bytes) -> None:
    headers = headers_for(openssl_signature(secret, str(NOW), body))
    for index in range(len(body)):
        with pytest.raises(WebhookVerificationError) as caught:
            verify(headers, _flip_byte(body, index), [secret], now=NOW)
        assert caught.value.reason == "signature_mismatch"


@requires_openssl
def test_verify_rejects_an_added_byte_and_a_removed_byte() -> None:
    body = b'{"a": 1}'
    headers = headers_for(openssl_signature(SECRET, str(NOW), body))
    for changed in (body + b" ", body[:-1], b" " + body):
        with pytest.raises(WebhookVerificationError) as caught:
            verify(headers, changed, [SECRET], now=NOW)
        assert caught.value.reason == "signature_mismatch"


@requires_openssl
@pytest.mark.parametrize("timestamp", [NOW + 1, NOW - 1, NOW + 10, NOW - 100])
def test_verify_rejects_a_changed_timestamp(timestamp: int) -> None:
    body = b'{"a": 1}'
    signature = openssl_signature(SECRET, str(NOW), body)

    with pytest.raises(WebhookVerificationError) as caught:
        verify(headers_for(signature, str(timestamp)), body, [SECRET], now=NOW)

    assert caught.value.reason == "signature_mismatch"


@requires_openssl
def test_verify_rejects_every_one_digit_change_to_the_signature() -> None:
    body = b'{"a": 1}'
    signature = openssl_signature(SECRET, str(NOW), body)
    prefix = len("sha256=")
    for index in range(prefix, len(signature)):
        digit = "0" if signature[index] != "0" else "1"
        changed = signature[:index] + digit + signature[index + 1 :]
        with pytest.raises(WebhookVerificationError) as caught:
            verify(headers_for(changed), body, [SECRET], now=NOW)
        assert caught.value.reason == "signature_mismatch"


# --- refusals, one row per reason --------------------------------------------------------------

BODY = b'{"a": 1}'
GOOD = sign(SECRET, NOW, BODY)


def _without(name: str) -> dict[str, str]:
    headers = headers_for(GOOD)
    del headers[name]
    return headers


REFUSALS: list[Any] = [
    pytest.param(_without("X-Svc-Event"), [SECRET], "missing_header", id="no-event"),
    pytest.param(_without("X-Svc-Event-Id"), [SECRET], "missing_header", id="no-event-id"),
    pytest.param(_without("X-Svc-Timestamp"), [SECRET], "missing_header", id="no-timestamp"),
    pytest.param(_without("X-Svc-Signature"), [SECRET], "missing_header", id="no-signature"),
    pytest.param({}, [SECRET], "missing_header", id="no-headers"),
    pytest.param(headers_for(GOOD, event_id=""), [SECRET], "missing_header", id="empty-id"),
    pytest.param(
        [*headers_for(GOOD).items(), ("x-svc-signature", "sha256=" + "0" * 64)],
        [SECRET],
        "duplicate_header",
        id="two-signatures",
    ),
    pytest.param(headers_for(GOOD, "abc"), [SECRET], "bad_timestamp", id="ts-letters"),
    pytest.param(headers_for(GOOD, "1700000000.5"), [SECRET], "bad_timestamp", id="ts-float"),
    pytest.param(headers_for(GOOD, "-1700000000"), [SECRET], "bad_timestamp", id="ts-negative"),
    pytest.param(headers_for(GOOD, "9" * 40), [SECRET], "bad_timestamp", id="ts-huge"),
    pytest.param(headers_for(GOOD, "\uff11\uff17"), [SECRET], "bad_timestamp", id="ts-fullwidth"),
    pytest.param(headers_for(GOOD[7:]), [SECRET], "bad_signature_format", id="no-prefix"),
    pytest.param(
        headers_for("sha1=" + GOOD[7:]), [SECRET], "bad_signature_format", id="sha1-prefix"
    ),
    pytest.param(
        headers_for(GOOD.upper().replace("SHA256=", "sha256=")),
        [SECRET],
        "bad_signature_format",
        id="uppercase-hex",
    ),
    pytest.param(headers_for(GOOD[:-2]), [SECRET], "bad_signature_format", id="short-hex"),
    pytest.param(headers_for(GOOD + "00"), [SECRET], "bad_signature_format", id="long-hex"),
    pytest.param(
        headers_for(GOOD[:-1] + "g"), [SECRET], "bad_signature_format", id="non-hex-digit"
    ),
    pytest.param(headers_for(GOOD), ["wrong-secret"], "signature_mismatch", id="wrong-secret"),
    pytest.param(headers_for(GOOD), [], "no_secrets", id="no-secrets"),
    pytest.param(headers_for(GOOD), ["", ""], "no_secrets", id="empty-secrets"),
    pytest.param(headers_for(GOOD), "", "no_secrets", id="empty-string-secret"),
]


@pytest.mark.parametrize(("headers", "secrets", "reason"), REFUSALS)
def test_each_refusal_has_its_reason(headers: Any, secrets: Any, reason: str) -> None:
    with pytest.raises(WebhookVerificationError) as caught:
        verify(headers, BODY, secrets, now=NOW)

    error = caught.value
    assert error.reason == reason
    assert isinstance(error, PracticeflowError)
    assert error.kind == "auth"
    assert reason in str(error)


@pytest.mark.parametrize(
    ("offset", "tolerance", "reason"),
    [
        pytest.param(-301, 300, "stale_timestamp", id="stale-by-1s"),
        pytest.param(301, 300, "future_timestamp", id="future-by-1s"),
        pytest.param(-86_400, 300, "stale_timestamp", id="a-day-old"),
        pytest.param(-1, 0, "stale_timestamp", id="zero-tolerance-past"),
        pytest.param(1, 0, "future_timestamp", id="zero-tolerance-future"),
        pytest.param(-61, 60, "stale_timestamp", id="custom-tolerance"),
    ],
)
def test_timestamps_outside_the_tolerance_are_refused(
    offset: int, tolerance: int, reason: str
) -> None:
    stamp = NOW + offset
    with pytest.raises(WebhookVerificationError) as caught:
        verify(signed(BODY, stamp), BODY, [SECRET], tolerance, now=NOW)
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("offset", "tolerance"),
    [(0, 300), (-300, 300), (300, 300), (0, 0), (-60, 60), (60, 60), (-299, 300)],
)
def test_timestamps_at_or_inside_the_tolerance_are_accepted(offset: int, tolerance: int) -> None:
    stamp = NOW + offset
    delivery = verify(signed(BODY, stamp), BODY, [SECRET], tolerance, now=NOW)
    assert delivery.timestamp == stamp


def test_fractional_clock_at_the_edge() -> None:
    verify(signed(BODY, NOW), BODY, [SECRET], 300, now=NOW + 300.0)
    with pytest.raises(WebhookVerificationError):
        verify(signed(BODY, NOW), BODY, [SECRET], 300, now=NOW + 300.001)


def test_a_forged_old_delivery_reports_the_signature_not_the_age() -> None:
    headers = headers_for("sha256=" + "0" * 64, str(NOW - 10_000))
    with pytest.raises(WebhookVerificationError) as caught:
        verify(headers, BODY, [SECRET], now=NOW)
    assert caught.value.reason == "signature_mismatch"


def test_default_clock_is_the_current_time() -> None:
    delivery = verify(delivery_headers(SECRET, EVENT, EVENT_ID, BODY), BODY, [SECRET])
    assert delivery.event == EVENT
    with pytest.raises(WebhookVerificationError) as caught:
        verify(signed(BODY, NOW), BODY, [SECRET])  # NOW is years in the past.
    assert caught.value.reason == "stale_timestamp"


def test_negative_tolerance_is_a_caller_mistake() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        verify(signed(), BODY, [SECRET], -1, now=NOW)


# --- header shapes -------------------------------------------------------------------------


def _case_variants() -> list[Any]:
    base = signed()
    return [
        pytest.param(base, id="dict"),
        pytest.param({k.lower(): v for k, v in base.items()}, id="lowercase-dict"),
        pytest.param({k.upper(): v for k, v in base.items()}, id="uppercase-dict"),
        pytest.param(list(base.items()), id="list-of-pairs"),
        pytest.param(
            [(k.lower().encode(), v.encode()) for k, v in base.items()], id="asgi-bytes-pairs"
        ),
        pytest.param(Headers(headers=base), id="starlette-headers"),
        pytest.param(
            Headers(raw=[(k.lower().encode(), v.encode()) for k, v in base.items()]),
            id="starlette-raw",
        ),
        pytest.param({**base, "Content-Type": "application/json"}, id="extra-headers"),
        pytest.param({k: f"  {v} " for k, v in base.items()}, id="padded-values"),
        pytest.param([*base.items(), *base.items()], id="identical-duplicates"),
    ]


@pytest.mark.parametrize("headers", _case_variants())
def test_header_names_are_case_insensitive_in_any_shape(headers: Any) -> None:
    delivery = verify(headers, BODY, [SECRET], now=NOW)
    assert (delivery.event, delivery.event_id, delivery.secret_index) == (EVENT, EVENT_ID, 0)


# --- rotation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signing_secret", "secrets", "index"),
    [
        pytest.param(SECRET, [SECRET, OLD_SECRET], 0, id="new-first"),
        pytest.param(OLD_SECRET, [SECRET, OLD_SECRET], 1, id="old-second"),
        pytest.param(OLD_SECRET, ["", OLD_SECRET], 1, id="index-counts-skipped-empties"),
        pytest.param(SECRET, (OLD_SECRET, "x", SECRET), 2, id="tuple-third"),
        pytest.param(SECRET, SECRET, 0, id="single-string"),
    ],
)
def test_rotation_reports_which_secret_matched(
    signing_secret: str, secrets: Any, index: int
) -> None:
    headers = headers_for(sign(signing_secret, NOW, BODY))
    assert verify(headers, BODY, secrets, now=NOW).secret_index == index


def test_a_delivery_signed_with_a_retired_secret_is_refused() -> None:
    headers = headers_for(sign(OLD_SECRET, NOW, BODY))
    with pytest.raises(WebhookVerificationError) as caught:
        verify(headers, BODY, [SECRET], now=NOW)
    assert caught.value.reason == "signature_mismatch"
    assert "1 configured secret" in str(caught.value)


# --- what leaks and what is kept -----------------------------------------------------------


@pytest.mark.parametrize(("headers", "secrets", "reason"), REFUSALS)
def test_errors_never_show_a_secret_or_the_body(headers: Any, secrets: Any, reason: str) -> None:
    body = b'{"pii": "Jane Citizen, 12 Secret St"}'
    # Add a second, real secret wherever one is configured, so a leak of either would show.
    configured = secrets if reason == "no_secrets" else [*secrets, OLD_SECRET]
    with pytest.raises(WebhookVerificationError) as caught:
        verify(headers, body, configured, now=NOW)
    text = str(caught.value) + repr(caught.value) + repr(caught.value.args)
    for secret in (SECRET, OLD_SECRET, "wrong-secret"):
        assert secret not in text
    assert "Jane" not in text
    assert "Secret St" not in text


def test_verified_delivery_repr_keeps_body_and_payload_out() -> None:
    body = b'{"name": "Jane Citizen"}'
    delivery = verify(signed(body), body, [SECRET], now=NOW)
    assert "Jane" not in repr(delivery)
    assert SECRET not in repr(delivery)


@pytest.mark.parametrize(
    ("body", "payload", "is_json"),
    [
        pytest.param(b'{"a": [1, 2]}', {"a": [1, 2]}, True, id="object"),
        pytest.param(b"[1]", [1], True, id="array"),
        pytest.param('{"n": "Zoë"}'.encode(), {"n": "Zoë"}, True, id="utf8"),
        pytest.param(b"", b"", False, id="empty"),
        pytest.param(b"hello", b"hello", False, id="text"),
        pytest.param(b"\xff\xfe\x00", b"\xff\xfe\x00", False, id="binary"),
        pytest.param(b"[" * 100_000, b"[" * 100_000, False, id="absurd-nesting"),
    ],
)
def test_payload_is_parsed_when_json_and_kept_raw_otherwise(
    body: bytes, payload: Any, is_json: bool
) -> None:
    delivery = verify(signed(body), body, [SECRET], now=NOW)
    assert delivery.payload == payload
    assert delivery.payload_is_json is is_json
    assert delivery.body == body


def test_verified_delivery_exposes_the_signature_for_dedupe() -> None:
    headers = signed()
    first = verify(headers, BODY, [SECRET], now=NOW)
    replay = verify({**headers, "X-Svc-Event-Id": "evt-other"}, BODY, [SECRET], now=NOW)
    assert first.event_id != replay.event_id
    assert first.signature == replay.signature
    assert isinstance(first, VerifiedDelivery)


def test_delivery_headers_round_trip() -> None:
    headers = delivery_headers(SECRET, EVENT, EVENT_ID, "{}", timestamp=NOW)
    assert headers["X-Svc-Timestamp"] == str(NOW)
    assert verify(headers, b"{}", [SECRET], now=NOW).payload == {}


def test_sign_accepts_text_and_string_timestamps() -> None:
    assert sign(SECRET, str(NOW), "é") == sign(SECRET, NOW, "é".encode())
