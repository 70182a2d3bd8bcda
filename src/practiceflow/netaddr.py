"""Listen addresses given by people: ``HOST:PORT`` or ``PORT`` alone (on loopback).

The receiver (``PRACTICEFLOW_LISTEN``), a fleet worker (``--listen``) and the console
(``--console-listen``) all read their address with :func:`parse_listen`, so each says the
same thing about a bad value.
"""

from __future__ import annotations

from practiceflow.errors import ConfigError

__all__ = ["LOOPBACK", "parse_listen"]

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
