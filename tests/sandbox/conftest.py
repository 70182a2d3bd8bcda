"""Fixtures of the sandbox tests: small HTTP clients and a webhook receiver."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from practiceflow.testing import SandboxHandle


class Api:
    """A plain ``requests`` client of one region with one kind of credentials."""

    def __init__(
        self, sandbox: SandboxHandle, region: str = "anz", kind: str = "rw", method: str = "headers"
    ) -> None:
        self.base = sandbox.base_url(region)
        client_id, secret = sandbox.credentials(region, kind)  # type: ignore[arg-type]
        self.session = requests.Session()
        self.session.trust_env = False
        if method == "headers":
            self.session.headers.update({"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret})
        else:
            token = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
            self.session.headers["Authorization"] = f"Basic {token}"

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        return self.session.request(method, self.base + path, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, json=json, **kwargs)


@pytest.fixture
def make_api(sandbox: SandboxHandle) -> Iterator[Any]:
    """``make_api(region="anz", kind="rw", method="headers")`` builds an :class:`Api`."""
    made: list[Api] = []

    def make(region: str = "anz", kind: str = "rw", method: str = "headers") -> Api:
        client = Api(sandbox, region, kind, method)
        made.append(client)
        return client

    yield make
    for client in made:
        client.session.close()


@pytest.fixture
def api(sandbox: SandboxHandle) -> Iterator[Api]:
    """Read-write client of the anz region (header auth)."""
    client = Api(sandbox)
    yield client
    client.session.close()


@pytest.fixture
def ro_api(sandbox: SandboxHandle) -> Iterator[Api]:
    """Read-only client of the anz region."""
    client = Api(sandbox, kind="ro")
    yield client
    client.session.close()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 that records raw deliveries.

    ``statuses`` is consumed one per request (then 200): ``[500, 500]`` fails twice.
    """

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A running receiver; its ``url`` is what to subscribe."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with state.lock:
                state.received.append(Received({k: v for k, v in self.headers.items()}, body))
                status = state.statuses.pop(0) if state.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
