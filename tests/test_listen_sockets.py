"""Every socket practiceflow binds before handing it to uvicorn (the sandbox command, serve's
early receiver socket, the MCP HTTP transport) says it is TCP, so that asyncio sets
TCP_NODELAY on each accepted connection: without it a small answer written in two parts
waits for the client's delayed ACK (about 40 ms a request on Linux)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import pytest

from practiceflow.cli.sandbox import _bind
from practiceflow.mcp import bind_http
from practiceflow.service.netaddr import bind_listen

BINDERS: dict[str, Callable[[str, int], socket.socket]] = {
    "sandbox": _bind,
    "early receiver": bind_listen,
    "mcp http": bind_http,
}


@pytest.mark.parametrize("name", sorted(BINDERS))
def test_accepted_connections_get_tcp_nodelay_from_asyncio(name: str) -> None:
    listener = BINDERS[name]("127.0.0.1", 0)
    try:
        listener.listen()
        host, port = listener.getsockname()[:2]

        async def nodelay_of_accepted() -> int:
            seen: list[int] = []

            def on_connect(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                accepted = writer.get_extra_info("socket")
                seen.append(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                writer.close()

            server = await asyncio.start_server(on_connect, sock=listener)
            async with server:
                _, writer = await asyncio.open_connection(host, port)
                for _ in range(500):
                    if seen:
                        break
                    await asyncio.sleep(0.01)
                writer.close()
            return seen[0]

        assert asyncio.run(nodelay_of_accepted()) != 0
    finally:
        listener.close()
