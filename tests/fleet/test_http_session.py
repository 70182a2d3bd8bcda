"""A practice's session reads the environment's proxy and CA settings once, at start, and
then sends with exactly what ``requests`` would have read per request (fleet/http_session.py)."""

from __future__ import annotations

import pytest
import requests

from practiceflow.fleet.http_session import http_connections, settle_environment

URL = "https://partner-api.example/anz"

CASES = {
    "no proxy variables": {},
    "an https proxy": {"HTTPS_PROXY": "http://proxy.example:3128"},
    "a proxy the host bypasses": {
        "HTTPS_PROXY": "http://proxy.example:3128",
        "NO_PROXY": "partner-api.example",
    },
    "a proxy another host bypasses": {
        "HTTPS_PROXY": "http://proxy.example:3128",
        "NO_PROXY": "other.example",
    },
    "a CA bundle": {"REQUESTS_CA_BUNDLE": "/etc/ssl/bundle.pem"},
    "cURL's CA bundle": {"CURL_CA_BUNDLE": "/etc/ssl/curl.pem"},
}
NAMES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
         "NO_PROXY", "no_proxy", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")  # fmt: skip


def _sent_with(session: requests.Session) -> dict[str, object]:
    """What the client sends a request with (as ``Client._build`` asks for it)."""
    return session.merge_environment_settings(f"{URL}/api/v1/entities", {}, False, None, None)


@pytest.mark.parametrize("environ", CASES.values(), ids=CASES.keys())
def test_settled_once_sends_as_reading_the_environment_per_request(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    per_request = _sent_with(requests.Session())

    settled = settle_environment(requests.Session(), URL)

    assert _sent_with(settled) == per_request
    # Read once: a variable set later changes nothing (it is not read per request).
    monkeypatch.setenv("HTTPS_PROXY", "http://later.example:1")
    assert _sent_with(settled) == per_request
    assert settled.trust_env is False


@pytest.mark.parametrize(
    ("budget_connections", "owned", "expected"),
    [(4, False, 4), (4, True, 8), (26, True, 52), (1, False, 2), (1, True, 4)],
)
def test_the_pool_keeps_a_connection_per_sending_thread(
    budget_connections: int, owned: bool, expected: int
) -> None:
    # worker --concurrency C: C job threads (budget_connections = C + 2); an owner adds
    # max(4, C) poll threads.
    assert http_connections(budget_connections, owned) == expected
