"""Running the sandbox: uvicorn in a background thread or the foreground, on loopback only
(:func:`check_loopback` refuses any other host)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from typing import Any

import requests
import uvicorn

from practiceflow.sandbox.app import SandboxApp
from practiceflow.sandbox.config import REGIONS, ClientKind, SandboxConfig
from practiceflow.sandbox.state import SandboxState


def check_loopback(host: str) -> str:
    """The IP address to bind for ``host`` (``localhost`` is 127.0.0.1); ValueError unless
    it is loopback."""
    candidate = "127.0.0.1" if host == "localhost" else host
    try:
        loopback = ipaddress.ip_address(candidate).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        message = f"host: got {host!r}; the sandbox only binds loopback (127.0.0.1, ::1)"
        raise ValueError(message)
    return candidate


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


def _uvicorn_config(app: Any, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
        timeout_keep_alive=5,
    )


class SandboxHandle:
    """A sandbox running in a background thread on ``host``:``port`` (loopback); ``state``
    is its live :class:`SandboxState`, for in-process assertions."""

    def __init__(self, config: SandboxConfig, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = check_loopback(host)
        self.state = SandboxState(config)
        self.admin_token = config.admin_token
        self._wanted_port = port
        self.port = port or _free_port(self.host)
        self._server, self._thread = self._make_server()
        self._session = requests.Session()
        self._session.trust_env = False  # loopback only: never through a proxy

    @property
    def url(self) -> str:
        """Root URL, such as ``http://127.0.0.1:54321``."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def _make_server(self) -> tuple[uvicorn.Server, threading.Thread]:
        # uvicorn binds the port itself: handing it a pre-bound socket loses TCP_NODELAY on
        # accepted connections (small answers would then wait for the peer's delayed ACK).
        server = uvicorn.Server(_uvicorn_config(SandboxApp(self.state), self.host, self.port))
        thread = threading.Thread(target=server.run, daemon=True, name=f"sandbox-{self.port}")
        return server, thread

    def start(self, timeout: float = 5.0) -> SandboxHandle:
        """Start serving and wait until the socket answers.

        Args:
            timeout: seconds to wait for readiness.

        Raises:
            RuntimeError: the server did not start in time.
        """
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        self.state.dispatcher.start()
        for _ in range(5):  # a free port may be taken between probing and binding
            self._thread.start()
            deadline = time.monotonic() + timeout
            while not self._server.started and self._thread.is_alive():
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the sandbox did not start on {self.url}")
                time.sleep(0.005)
            if self._server.started:
                return self
            if self._wanted_port:
                break
            self.port = _free_port(self.host)
            self._server, self._thread = self._make_server()
        self.stop()
        raise RuntimeError(f"the sandbox could not bind {self.url}")

    def stop(self) -> None:
        """Stop the server and the webhook dispatcher; idempotent."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.state.dispatcher.stop()
        self._session.close()

    def __enter__(self) -> SandboxHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def base_url(self, region: str = "anz") -> str:
        """The API base URL of ``region`` (``anz``, ``uk`` or ``za``), such as
        ``http://127.0.0.1:54321/anz``; routes are ``<base>/api/v1/...``."""
        if region not in REGIONS:
            raise ValueError(f"region: got {region!r}; valid values are {list(REGIONS)}")
        return f"{self.url}/{region}"

    def credentials(self, region: str = "anz", kind: ClientKind = "rw") -> tuple[str, str]:
        """``(client_id, secret)`` of the region's ``kind`` client: ``rw`` (read-write),
        ``ro`` (read-only) or ``inactive``."""
        credential = self.state.credentials[region][kind]
        return credential.client_id, credential.secret

    def admin(self, method: str, path: str, json: Any = None, **params: Any) -> Any:
        """Call the admin surface and return its parsed JSON answer.

        Args:
            method: HTTP method.
            path: path under the root, such as ``/_admin/reset`` (``/_admin`` may be omitted).
            json: the JSON body.
            **params: query parameters (such as ``region="uk"``).

        Raises:
            requests.HTTPError: the admin surface answered with an error status.
        """
        if not path.startswith("/_admin"):
            path = "/_admin/" + path.lstrip("/")
        response = self._session.request(
            method,
            self.url + path,
            json=json,
            params=params or None,
            # A fresh connection per call: a pooled one may be closed by the server's
            # keep-alive timeout just as it is reused (a ConnectionResetError in CI).
            headers={"X-Admin-Token": self.admin_token, "Connection": "close"},
            timeout=30,
        )
        response.raise_for_status()
        return response.json()

    def reset(self) -> None:
        """Return the sandbox to its seed (same as ``POST /_admin/reset``)."""
        self.admin("POST", "/_admin/reset")

    def wait_for_deliveries(self, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Wait until the delivery log holds at least ``count`` attempts; return the log.

        Raises:
            TimeoutError: fewer attempts were logged within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            log = self.state.dispatcher.log()
            if len(log) >= count:
                return log
            if time.monotonic() > deadline:
                message = f"{len(log)} delivery attempts logged after {timeout}s; wanted {count}"
                raise TimeoutError(message)
            time.sleep(0.01)


def start_sandbox(
    config: SandboxConfig | None = None, host: str = "127.0.0.1", port: int = 0
) -> SandboxHandle:
    """Start a sandbox in a background thread (``port`` 0 picks a free one) and return its
    handle; call ``stop()``, or use it as a context manager."""
    return SandboxHandle(config or SandboxConfig(), host, port).start()


def serve_forever(
    config: SandboxConfig, host: str, port: int, sock: socket.socket | None = None
) -> None:
    """Serve in the foreground until Ctrl-C or SIGTERM (uvicorn handles both); ``sock`` is a
    socket already bound to ``host:port`` (so a caller can announce the address once it
    accepts connections), or None to bind here."""
    host = check_loopback(host)
    state = SandboxState(config)
    state.dispatcher.start()
    try:
        server = uvicorn.Server(_uvicorn_config(SandboxApp(state), host, port))
        server.run(sockets=[sock] if sock is not None else None)
    finally:
        state.dispatcher.stop()
