"""Listen addresses given by people: ``HOST:PORT`` or ``PORT`` alone (on loopback).

The receiver (``PRACTICEFLOW_LISTEN``), a fleet worker (``--listen``) and the console
(``--console-listen``) all read their address with :func:`parse_listen`, so each says the
same thing about a bad value. A socket bound before a server takes it (the sandbox
command, serve's early receiver socket, ``mcp --transport http``) comes from
:func:`listen_tcp`.
"""

from __future__ import annotations

import socket

from practiceflow.errors import ConfigError

__all__ = ["LOOPBACK", "listen_tcp", "parse_listen"]

#: Where everything listens unless told otherwise.
LOOPBACK = "127.0.0.1"


def parse_listen(text: str, *, option: str, example: str) -> tuple[str, int]:
    """Read ``HOST:PORT`` (``[::1]:PORT`` for IPv6) or ``PORT`` alone (on 127.0.0.1).

    Args:
        text: the value as given.
        option: the option or variable it came from, for the error message.
        example: a valid value to show in the error message.

    Returns:
        ``(host, port)``; port ``0`` means "pick a free one".

    Raises:
        ConfigError: not a host and a port from 0 to 65535.
    """
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        message = f"{option}: got {text!r}; expected HOST:PORT or PORT, such as {example}"
        raise ConfigError(message)
    return host.strip("[]") or LOOPBACK, int(port)


def listen_tcp(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (port 0: any free port).

    The socket is created as ``IPPROTO_TCP``: asyncio sets ``TCP_NODELAY`` only on accepted
    connections whose protocol says TCP, and without it a small answer written in two
    parts waits for the peer's delayed ACK.

    Raises:
        OSError: the address cannot be bound (the caller says what to do about it).
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
