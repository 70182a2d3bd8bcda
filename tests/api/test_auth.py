"""Exactly one auth method per request: the header pair by default, HTTP Basic on request."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
import requests
import responses
from responses import matchers

from practiceflow import __version__
from practiceflow.api import Client
from practiceflow.errors import ConfigError

from .conftest import BASE, CLIENT_ID, SECRET

BASIC = "Basic " + base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode()
COMMON = {
    "User-Agent": f"practiceflow/{__version__} python-requests/{requests.__version__}",
    "Accept-Encoding": requests.utils.default_headers()["Accept-Encoding"],
    "Accept": "application/json",
    "Connection": "keep-alive",
}


@pytest.mark.parametrize(
    ("method", "expected", "absent"),
    [
        pytest.param(
            "header",
            {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET},
            ("Authorization",),
            id="header",
        ),
        pytest.param(
            "basic", {"Authorization": BASIC}, ("X-SVC-Auth-ID", "X-SVC-Auth-Key"), id="basic"
        ),
    ],
)
def test_each_method_sends_exactly_its_own_headers(
    rsps: responses.RequestsMock,
    make_client: Callable[..., Client],
    method: str,
    expected: dict[str, str],
    absent: tuple[str, ...],
) -> None:
    exact = {**COMMON, **expected}
    rsps.get(
        f"{BASE}/api/v1/auth/validate",
        json={"authenticated": True},
        match=[matchers.header_matcher(exact, strict_match=True)],
    )
    make_client(auth_method=method).get("/api/v1/auth/validate")
    sent = rsps.calls[0].request.headers
    assert dict(sent) == exact
    for name in absent:
        assert name not in sent


def test_write_headers_are_exact_too(rsps: responses.RequestsMock, client: Client) -> None:
    body = {"entityName": "Acme"}
    exact = {
        **COMMON,
        "X-SVC-Auth-ID": CLIENT_ID,
        "X-SVC-Auth-Key": SECRET,
        "Content-Type": "application/json",
        "Content-Length": "22",
    }
    rsps.post(
        f"{BASE}/api/v1/entities",
        status=201,
        json={"entityKey": "k"},
        match=[
            matchers.header_matcher(exact, strict_match=True),
            matchers.json_params_matcher(body),
        ],
    )
    assert client.post("/api/v1/entities", json=body) == {"entityKey": "k"}


@pytest.mark.parametrize("method", ["header", "basic"])
def test_session_auth_and_netrc_cannot_add_a_second_method(
    rsps: responses.RequestsMock, make_client: Callable[..., Client], method: str
) -> None:
    session = requests.Session()
    session.auth = ("someone", "else")
    session.headers["X-SVC-Auth-Key"] = "stale"
    rsps.get(f"{BASE}/api/v1/groups/list", json=[])
    make_client(auth_method=method, session=session).get("/api/v1/groups/list")
    sent = rsps.calls[0].request.headers
    if method == "header":
        assert "Authorization" not in sent
        assert sent["X-SVC-Auth-Key"] == SECRET
    else:
        assert sent["Authorization"] == BASIC
        assert "X-SVC-Auth-Key" not in sent
        assert "X-SVC-Auth-ID" not in sent
    session.close()


@pytest.mark.parametrize("name", ["Authorization", "x-svc-auth-key", "X-SVC-Auth-ID"])
def test_credential_headers_from_the_caller_are_refused_before_sending(
    rsps: responses.RequestsMock, client: Client, name: str
) -> None:
    with pytest.raises(ConfigError, match="credentials are added by the client's auth method"):
        client.request("GET", "/api/v1/groups/list", headers={name: "x"})
    assert len(rsps.calls) == 0


@pytest.mark.parametrize(
    ("method", "masked"),
    [("header", "X-SVC-Auth-Key"), ("basic", "Authorization")],
)
def test_describe_request_shows_the_request_with_secrets_masked(
    make_client: Callable[..., Client], method: str, masked: str
) -> None:
    client = make_client(auth_method=method)
    described = client.describe_request(
        "post",
        "/api/v1/bills",
        params={"syncNow": True},
        json={"entityKey": "k", "lineItems": []},
        headers={"X-Request-Id": "r1"},
    )
    assert described["method"] == "POST"
    assert described["url"] == f"{BASE}/api/v1/bills?syncNow=true"
    assert described["json"] == {"entityKey": "k", "lineItems": []}
    assert described["headers"][masked] == "***"
    assert described["headers"]["X-Request-Id"] == "r1"
    assert described["headers"]["Content-Type"] == "application/json"
    assert SECRET not in repr(described)
    assert base64.b64encode(f"{CLIENT_ID}:{SECRET}".encode()).decode() not in repr(described)
    if method == "header":
        assert described["headers"]["X-SVC-Auth-ID"] == CLIENT_ID
        assert "Authorization" not in described["headers"]


@pytest.mark.parametrize(
    "path", ["api/v1/bills", "https://evil.test/api/v1/bills", "//evil.test/x"]
)
def test_paths_must_be_relative_to_the_base_url(
    rsps: responses.RequestsMock, client: Client, path: str
) -> None:
    with pytest.raises(ConfigError, match="starting with '/'"):
        client.get(path)
    assert len(rsps.calls) == 0


def test_redirects_are_not_followed_so_credentials_stay_home(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.get(
        f"{BASE}/api/v1/bills/1/pdf",
        status=302,
        headers={"Location": "https://elsewhere.test/file.pdf"},
    )
    response = client.request("GET", "/api/v1/bills/1/pdf")
    assert response.status == 302
    assert len(rsps.calls) == 1
