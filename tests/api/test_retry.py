"""Reads are retried within a bound; writes only when the API certainly did not act."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
import requests
import responses
from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
)

from practiceflow.api import Client, RetryPolicy
from practiceflow.api.retry import refused_before_sending
from practiceflow.errors import InDoubtError, ServerError, TransportError
from practiceflow.testing import FakeClock

from .conftest import BASE, CLIENT_ID, SECRET

BILLS = f"{BASE}/api/v1/bills"
GROUPS = f"{BASE}/api/v1/groups/list"


def refused() -> requests.ConnectionError:
    reason = NewConnectionError(None, "Failed to establish a new connection: [Errno 111] refused")  # type: ignore[arg-type]
    return requests.ConnectionError(MaxRetryError(None, BILLS, reason))  # type: ignore[arg-type]


def reset_after_send() -> requests.ConnectionError:
    cause = ProtocolError("Connection aborted.", ConnectionResetError(104, "reset by peer"))
    return requests.ConnectionError(cause)


def connect_timeout() -> requests.ConnectTimeout:
    reason = ConnectTimeoutError(None, "timed out")
    return requests.ConnectTimeout(MaxRetryError(None, BILLS, reason))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        pytest.param(refused(), True, id="refused"),
        pytest.param(connect_timeout(), True, id="connect-timeout"),
        pytest.param(reset_after_send(), False, id="reset"),
        pytest.param(requests.ReadTimeout("read timed out"), False, id="read-timeout"),
        pytest.param(requests.ConnectionError("??"), False, id="unknown"),
    ],
)
def test_only_connection_setup_failures_count_as_not_sent(
    exc: BaseException, expected: bool
) -> None:
    assert refused_before_sending(exc) is expected


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"status": 500}, id="500"),
        pytest.param({"status": 503}, id="503"),
        pytest.param({"body": reset_after_send()}, id="reset"),
        pytest.param({"body": requests.ReadTimeout("slow")}, id="read-timeout"),
        pytest.param({"body": refused()}, id="refused"),
    ],
)
def test_reads_are_retried_then_succeed(
    rsps: responses.RequestsMock, client: Client, clock: FakeClock, failure: dict[str, object]
) -> None:
    rsps.get(GROUPS, **failure)  # type: ignore[arg-type]
    rsps.get(GROUPS, **failure)  # type: ignore[arg-type]
    rsps.get(GROUPS, json=[{"groupID": 1}])
    assert client.get("/api/v1/groups/list") == [{"groupID": 1}]
    assert len(rsps.calls) == 3
    assert len(clock.sleeps) == 2


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        pytest.param({"status": 500}, ServerError, id="500"),
        pytest.param({"body": requests.ReadTimeout("slow")}, TransportError, id="timeout"),
    ],
)
def test_reads_give_up_after_the_attempt_budget(
    rsps: responses.RequestsMock,
    make_client: Callable[..., Client],
    clock: FakeClock,
    failure: dict[str, object],
    error: type[Exception],
) -> None:
    rsps.get(GROUPS, **failure)  # type: ignore[arg-type]
    client = make_client(retry=RetryPolicy(max_attempts=4))
    with pytest.raises(error):
        client.get("/api/v1/groups/list")
    assert len(rsps.calls) == 4
    assert len(clock.sleeps) == 3


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        pytest.param({"status": 500}, ServerError, id="500"),
        pytest.param({"status": 502, "body": "<html>bad gateway</html>"}, ServerError, id="502"),
        pytest.param({"body": requests.ReadTimeout("slow")}, TransportError, id="timeout"),
        pytest.param({"body": reset_after_send()}, TransportError, id="reset-after-send"),
    ],
)
def test_writes_in_doubt_are_sent_exactly_once(
    rsps: responses.RequestsMock,
    client: Client,
    clock: FakeClock,
    method: str,
    failure: dict[str, object],
    cause: type[Exception],
) -> None:
    rsps.add(method, BILLS, **failure)  # type: ignore[arg-type]
    with pytest.raises(InDoubtError) as info:
        client.request(method, "/api/v1/bills", json={"entityKey": "k"})
    assert len(rsps.calls) == 1
    assert clock.sleeps == []
    assert isinstance(info.value.cause, cause)
    assert info.value.kind == "in_doubt"
    assert (info.value.method, info.value.path) == (method, "/api/v1/bills")
    assert "not repeated" in str(info.value)


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"status": 429, "headers": {"Retry-After": "3"}}, id="429"),
        pytest.param({"body": refused()}, id="refused"),
        pytest.param({"body": connect_timeout()}, id="connect-timeout"),
    ],
)
def test_writes_are_retried_when_the_api_certainly_did_not_act(
    rsps: responses.RequestsMock, client: Client, failure: dict[str, object]
) -> None:
    rsps.post(BILLS, **failure)  # type: ignore[arg-type]
    rsps.post(BILLS, status=201, json={"billingID": 7})
    assert client.post("/api/v1/bills", json={"entityKey": "k"}) == {"billingID": 7}
    assert len(rsps.calls) == 2


def test_write_refused_every_time_ends_as_transport_error_not_in_doubt(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.post(BILLS, body=refused())
    with pytest.raises(TransportError) as info:
        client.post("/api/v1/bills", json={})
    assert not isinstance(info.value, InDoubtError)
    assert len(rsps.calls) == 3


# -- real sockets on 127.0.0.1 -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Slow(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        type(self).hits.append(self.path)
        time.sleep(1.0)
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    _Slow.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_real_refused_connection_retries_a_write(make_client: Callable[..., Client]) -> None:
    client = make_client(base_url=f"http://127.0.0.1:{_free_port()}/anz")
    with pytest.raises(TransportError, match="could not be opened"):
        client.post("/api/v1/bills", json={"entityKey": "k"})


def test_real_timeout_on_a_write_is_in_doubt_and_sent_once(slow_server: str) -> None:
    clock = FakeClock()
    client = Client(
        CLIENT_ID,
        SECRET,
        base_url=slow_server,
        timeout=0.2,
        clock=clock.monotonic,
        sleep=clock.sleep,
    )
    with client, pytest.raises(InDoubtError):
        client.post("/api/v1/bills", json={"entityKey": "k"})
    assert _Slow.hits == ["/api/v1/bills"]
    assert clock.sleeps == []
