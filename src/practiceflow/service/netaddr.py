"""Listen addresses given by people (``HOST:PORT`` or ``PORT`` alone, on loopback), read by one
function so every option says the same about a bad value; listening sockets, the receiver's
bound by :func:`claim` before ``serve``'s slow imports (stdlib only) so that a sender retrying
meanwhile is queued by the kernel, not refused; and :class:`ThreadedServer`, an ASGI app in a
thread (the console, ``worker --ops-listen``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import sys
import threading
import time
from typing import Any, Final

from practiceflow.errors import ConfigError

#: Where everything listens unless told otherwise.
LOOPBACK = "127.0.0.1"
#: Where the command line keeps the claimed socket for ``serve`` (``click.Context.meta``).
EARLY_SOCKET: Final = "practiceflow.early_socket"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_listen(text: str, *, option: str, example: str) -> tuple[str, int]:
    """``(host, port)`` from ``HOST:PORT`` (``[::1]:PORT``) or ``PORT`` alone (on 127.0.0.1; 0: any
    free port); a ConfigError naming ``option`` and showing ``example`` otherwise.
    """
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        message = f"{option}: got {text!r}; expected HOST:PORT or PORT, such as {example}"
        raise ConfigError(message)
    return host.strip("[]") or LOOPBACK, int(port)


def listen_tcp(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on ``(host, port)``, created as ``IPPROTO_TCP``: asyncio sets
    ``TCP_NODELAY`` only then, and without it a two-part answer waits for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def _argument(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` on a command line, if given."""
    for index, item in enumerate(argv):
        if item == name and index + 1 < len(argv):
            return argv[index + 1]
        if item.startswith(name + "="):
            return item.partition("=")[2]
    return None


def claim(
    environ: dict[str, str] | None = None, argv: list[str] | None = None
) -> socket.socket | None:
    """Bind ``--listen`` / ``PRACTICEFLOW_LISTEN`` when a public URL is set (None: not claimed)."""
    env = dict(os.environ) if environ is None else environ
    args = sys.argv[1:] if argv is None else argv
    text = _argument(args, "--listen") or env.get("PRACTICEFLOW_LISTEN")
    public = _argument(args, "--public-url") or env.get("PRACTICEFLOW_PUBLIC_URL")
    if not text or not public:
        return None
    try:
        host, port = parse_listen(text, option="PRACTICEFLOW_LISTEN", example="127.0.0.1:8080")
        return bind_listen(host, port)
    except Exception:  # any failure is reported by the normal start-up
        return None


def bind_listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``(host, port)``; raises ``ConfigError`` when it cannot bind."""
    try:
        return listen_tcp(host, port)
    except OSError as exc:
        message = f"webhook receiver on {host}:{port} cannot listen: {exc.strerror or exc}"
        raise ConfigError(message) from None


class ThreadedServer:
    """An ASGI app served by uvicorn in a daemon thread (uvicorn is imported only here, so this
    module stays light for serve's early socket); port 0: read ``.port`` after :meth:`serve`.
    """

    def __init__(self, app: Any, host: str, port: int, name: str) -> None:
        import uvicorn

        self.host = host
        self.port = port
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        # uvicorn exits when it cannot bind; it logged why, and serve() reports it.
        with contextlib.suppress(SystemExit):
            self._server.run()

    @property
    def root(self) -> str:
        """``http://HOST:PORT`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def serve(self, timeout: float) -> bool:
        """Start and wait until the socket listens (then ``.port`` is bound); False on timeout."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                return False
            time.sleep(0.01)
        for server in getattr(self._server, "servers", []):
            for sock in server.sockets:
                self.port = int(sock.getsockname()[1])
                break
        return True

    def stop(self) -> None:
        """Stop serving (requests in flight finish first)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
