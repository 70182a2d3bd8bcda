"""Serving the MCP server over stdio or streamable HTTP. HTTP beyond loopback needs a token
(anyone reaching the port could read the practice's records); the socket is bound before
start-up, so a taken port is a configuration error naming the address.
"""

from __future__ import annotations

import errno
import hmac
import logging
import socket
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from practiceflow.console.security import check_bind
from practiceflow.errors import ConfigError
from practiceflow.service.netaddr import is_loopback, listen_tcp

logger = logging.getLogger("practiceflow.mcp")

#: Where the streamable HTTP endpoint is.
MCP_PATH = "/mcp"
#: Where ``--transport http`` listens unless told otherwise: not the sandbox's 8765, which
#: is running whenever someone tries the server against it.
DEFAULT_LISTEN = "127.0.0.1:8766"
_BACKLOG = 128


def check_http_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token (ConfigError)."""
    refusal = (
        "mcp --listen: got {host!r} with no token; anyone who can reach it could read the "
        "practice's records. Pass --token (or PRACTICEFLOW_MCP_TOKEN), or listen on 127.0.0.1."
    )
    check_bind(host, token, refusal)


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_http(host: str, port: int) -> socket.socket:
    """Bind and listen on ``(host, port)`` for :func:`serve_http` (port 0: any free one);
    ConfigError when the address is taken or is not one of this machine's."""
    try:
        return listen_tcp(host, port, _BACKLOG)
    except OSError as exc:
        address = _shown(host, port)
        if exc.errno == errno.EADDRINUSE:
            hint = (
                "another program listens there (the sandbox's default is 127.0.0.1:8765). "
                "Stop it, or pass --listen with a free port (PORT 0 picks one)"
            )
        else:
            hint = "pass --listen with an address of this machine, such as 127.0.0.1:8766"
        message = f"mcp --listen {address}: cannot listen ({exc.strerror or exc}); {hint}"
        raise ConfigError(message) from None


class _BearerToken:
    """Lets through only HTTP requests that carry the token (lifespan events always)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            offered = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(offered, self._expected):
                error = {"error": "missing or wrong bearer token"}
                refusal = JSONResponse(error, 401, headers={"WWW-Authenticate": "Bearer"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def http_app(server: Server[Any], host: str, token: str | None) -> ASGIApp:
    """The ASGI app serving ``server`` at :data:`MCP_PATH` (token-checked when given);
    ConfigError beyond loopback without a token."""
    check_http_bind(host, token)
    security = None
    if not is_loopback(host):
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, transport_security=security
    )
    if token and token.strip():
        app = _BearerToken(app, token.strip())
    return app


def serve_http(server: Server[Any], sock: socket.socket, token: str | None) -> None:
    """Serve over streamable HTTP on a bound socket until interrupted (SIGINT / SIGTERM);
    ConfigError beyond loopback without a token."""
    host, port = sock.getsockname()[:2]
    app = http_app(server, host, token)
    logger.info("mcp: serving streamable HTTP on http://%s%s", _shown(host, port), MCP_PATH)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", access_log=False, lifespan="on"
    )
    uvicorn.Server(config).run(sockets=[sock])


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's standard input and output until it closes."""

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
