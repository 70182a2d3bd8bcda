"""Work done while the API works on a request (``Client.send(..., while_waiting=...)``):
once the request has reached the server and before its answer is read; once, even with
retries; after the exchange where the moment cannot be seen; its failure raised after the
exchange. Real HTTP on 127.0.0.1: a server that holds each answer until told."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from practiceflow.api import Client, RetryPolicy
from practiceflow.errors import InDoubtError, StoreError, TransportError

from .conftest import CLIENT_ID, SECRET, FakeClock


@dataclass
class _Server:
    """Answers each request with the next of ``statuses`` (then 200), once ``release`` is
    set (or at once when ``hold`` is False); notes each request as it arrives."""

    url: str
    statuses: list[int] = field(default_factory=list)
    hold: bool = True
    arrived: list[str] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


TLS = Path(__file__).parent / "tls"  # a self-signed certificate for 127.0.0.1 (tests only)


@contextmanager
def _serving(*, tls: bool = False) -> Iterator[_Server]:
    state = _Server("")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            state.arrived.append(f"{self.command} {self.path}")
            state.received.set()
            if state.hold:
                state.release.wait(10)
            status = state.statuses.pop(0) if state.statuses else 200
            body = json.dumps({"n": len(state.arrived)}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = _answer  # http.server's names
        do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    scheme = "https" if tls else "http"
    state.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}/anz"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    with _serving() as state:
        yield state


def _client(server: _Server, **options: Any) -> Client:
    clock = FakeClock()
    settings: dict[str, Any] = {
        "client_id": CLIENT_ID,
        "client_secret": SECRET,
        "base_url": server.url,
        "timeout": 5,
        "clock": clock,
        "sleep": clock.sleep,
        "retry": RetryPolicy(max_attempts=3),
    }
    settings.update(options)
    return Client(**settings)


def _work(server: _Server, notes: list[str]) -> Callable[[], None]:
    """Notes whether the server gets the request (it does at once if it was written before
    the work ran; never, were the work run before it is written), then lets it answer."""

    def work() -> None:
        notes.append("received" if server.received.wait(5) else "not received")
        server.release.set()

    return work


def test_the_work_runs_once_the_request_reached_the_server_before_the_answer(
    server: _Server,
) -> None:
    notes: list[str] = []
    with _client(server) as client:
        answer = client.send(
            client.prepare("POST", "/api/v1/bills", json={"a": 1}),
            while_waiting=_work(server, notes),
        )
    # The server holds its answer until the work has run: had the client waited for the
    # answer first, it would have timed out.
    assert notes == ["received"]
    assert (answer.status, answer.data) == (200, {"n": 1})
    assert server.arrived == ["POST /anz/api/v1/bills"]


def test_the_work_runs_in_flight_over_tls_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real API is HTTPS: its connections are the adapter's TLS ones, verified.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(TLS / "cert.pem"))
    notes: list[str] = []
    with _serving(tls=True) as server, _client(server) as client:
        answer = client.send(
            client.prepare("POST", "/api/v1/bills", json={"a": 1}),
            while_waiting=_work(server, notes),
        )
    assert server.url.startswith("https://")
    assert notes == ["received"]
    assert (answer.status, answer.data) == (200, {"n": 1})


def test_the_work_runs_once_when_a_read_is_retried(server: _Server) -> None:
    server.statuses = [503]
    notes: list[str] = []
    with _client(server) as client:
        answer = client.send(
            client.prepare("GET", "/api/v1/groups/list"), while_waiting=_work(server, notes)
        )
    assert notes == ["received"]
    assert answer.data == {"n": 2}
    assert len(server.arrived) == 2


def test_a_failing_work_is_raised_after_the_exchange_and_the_answer_dropped(
    server: _Server,
) -> None:
    def work() -> None:
        server.release.set()
        raise StoreError("state database: the disk is full (test)")

    with _client(server) as client, pytest.raises(StoreError, match="disk is full"):
        client.send(client.prepare("POST", "/api/v1/bills", json={}), while_waiting=work)
    assert server.arrived == ["POST /anz/api/v1/bills"]  # the exchange went through


def test_with_a_session_of_your_own_the_work_runs_after_the_exchange(server: _Server) -> None:
    server.hold = False
    notes: list[str] = []
    with _client(server, session=requests.Session()) as client:
        client.send(
            client.prepare("GET", "/api/v1/groups/list"), while_waiting=lambda: notes.append("ran")
        )
        assert notes == ["ran"]
        assert len(server.arrived) == 1


def test_the_work_runs_once_when_nothing_could_be_sent(server: _Server) -> None:
    notes: list[str] = []
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        refused = _Server(f"http://127.0.0.1:{probe.getsockname()[1]}/anz")
    with (
        _client(refused, retry=RetryPolicy(max_attempts=2)) as client,
        pytest.raises(TransportError),
    ):
        client.send(
            client.prepare("GET", "/api/v1/groups/list"),
            while_waiting=lambda: notes.append("ran"),
        )
    assert notes == ["ran"]
    assert server.arrived == []


def test_a_write_in_doubt_still_runs_the_work_in_flight(server: _Server) -> None:
    server.statuses = [502]
    notes: list[str] = []
    with _client(server) as client, pytest.raises(InDoubtError):
        client.send(
            client.prepare("POST", "/api/v1/bills", json={}), while_waiting=_work(server, notes)
        )
    assert notes == ["received"]
    assert len(server.arrived) == 1  # a write is never retried blindly


def test_work_of_one_send_never_runs_in_another(server: _Server) -> None:
    server.hold = False
    notes: list[str] = []
    with _client(server) as client:
        client.send(client.prepare("GET", "/a"), while_waiting=lambda: notes.append("first"))
        client.send(client.prepare("GET", "/b"))
    assert notes == ["first"]
