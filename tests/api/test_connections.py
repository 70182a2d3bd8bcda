"""A write is never sent on a kept-alive connection idle long enough for the server to be
closing it (api/connections.py): reset there, before the server read it, it would be in doubt
for nothing. Reads keep reusing warm connections. Checked for every session a client sends
with: its own, ``serve``'s counted one, and the fleet's shared pool."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
import requests

from practiceflow.api import Client, RateLimits
from practiceflow.api import connections as connections_module
from practiceflow.api.connections import WRITE_MAX_IDLE_S, fresh_pool_manager
from practiceflow.ops import counted_session

CLIENT_ID = "11111111-2222-3333-4444-555555555555"


class _KeepAlive(BaseHTTPRequestHandler):
    """Answers ``{}`` on a kept-alive connection, noting which connection each request came on."""

    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, int]]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append((self.command, self.client_address[1]))
        body = json.dumps({"billKey": "b-1"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[str, int]]]]:
    seen: list[tuple[str, int]] = []
    handler = type("Handler", (_KeepAlive,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


SESSIONS: dict[str, Callable[[], requests.Session | None]] = {
    "a client's own session": lambda: None,
    "serve's counted session": lambda: counted_session(lambda _: None),
    "the fleet's shared pool": lambda: counted_session(
        lambda _: None, connections=fresh_pool_manager(4)
    ),
}


@pytest.mark.parametrize("make_session", SESSIONS.values(), ids=SESSIONS.keys())
def test_a_write_after_an_idle_spell_takes_a_new_connection_and_reads_keep_the_warm_one(
    make_session: Callable[[], requests.Session | None],
    server: tuple[str, list[tuple[str, int]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, seen = server
    now = [1000.0]
    monkeypatch.setattr(connections_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    client = Client(CLIENT_ID, "s3cr3t", base_url=base, session=make_session(), limits=RateLimits())
    try:
        client.get("/api/v1/groups/list")
        now[0] += WRITE_MAX_IDLE_S / 2
        client.post("/api/v1/bills", json={"entityKey": "k"})  # warm: the same connection
        now[0] += WRITE_MAX_IDLE_S * 5
        client.get("/api/v1/groups/list")  # a read reuses it, however long it sat
        now[0] += WRITE_MAX_IDLE_S * 5
        client.post("/api/v1/bills", json={"entityKey": "k"})  # idle too long: a new one
        client.post("/api/v1/bills", json={"entityKey": "k"})  # just used: kept
    finally:
        client.close()

    methods = [method for method, _ in seen]
    ports = [port for _, port in seen]
    assert methods == ["GET", "POST", "GET", "POST", "POST"]
    assert ports[0] == ports[1] == ports[2]
    assert ports[3] != ports[2]
    assert ports[4] == ports[3]
