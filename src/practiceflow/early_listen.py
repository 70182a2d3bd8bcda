"""The receiver's socket, bound before the slow start-up of ``serve`` (stdlib only).

Importing what ``serve`` needs (the runner, the module registry, the web server) takes a
few seconds of a loaded machine; a sender whose retry lands then would find the port
closed. So the ``practiceflow`` command binds and listens on ``PRACTICEFLOW_LISTEN`` first
thing when the command is ``serve`` and a public URL is configured: from that moment the
kernel completes connections and queues them (the listen backlog), and the receiver,
once started, serves them from the same socket. Nothing is answered before the receiver
can verify and store; nothing is refused either.

A bind that fails (the port is taken, say by a first ``serve``) is ignored here: the normal
start-up reports it, after the clearer checks (such as the state file's lease).
"""

from __future__ import annotations

import os
import socket
from typing import Final

__all__ = ["bind_listen", "claim", "release", "take"]

_BACKLOG: Final = 128
_claimed: dict[tuple[str, int], socket.socket] = {}


def claim(environ: dict[str, str] | None = None) -> socket.socket | None:
    """Bind and listen on ``PRACTICEFLOW_LISTEN`` when a public URL is configured.

    Returns:
        The listening socket, or None when nothing was claimed.
    """
    from practiceflow.netaddr import parse_listen  # light: no third-party import

    env = dict(os.environ) if environ is None else environ
    text = env.get("PRACTICEFLOW_LISTEN")
    if not text or not env.get("PRACTICEFLOW_PUBLIC_URL"):
        return None
    try:
        host, port = parse_listen(text, option="PRACTICEFLOW_LISTEN", example="127.0.0.1:8080")
        sock = bind_listen(host, port)
    except Exception:  # any failure is reported by the normal start-up
        return None
    _claimed[(host, port)] = sock
    return sock


def bind_listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening (port 0: any free port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        from practiceflow.errors import ConfigError

        message = f"webhook receiver on {host}:{port} cannot listen: {exc.strerror or exc}"
        raise ConfigError(message) from None
    return sock


def take(host: str, port: int) -> socket.socket | None:
    """The socket claimed for ``(host, port)``, handed over once (None when none was)."""
    return _claimed.pop((host, port), None)


def release() -> None:
    """Close what was claimed and not taken (no webhook trigger needed it)."""
    while _claimed:
        _, sock = _claimed.popitem()
        sock.close()
