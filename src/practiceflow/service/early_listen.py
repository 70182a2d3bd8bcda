"""The receiver's socket, bound before the slow start-up of ``serve`` (stdlib only).

Importing what ``serve`` needs (the runner, the module registry, the web server) takes a
few seconds of a loaded machine; a sender whose retry lands then would find the port
closed. So the ``practiceflow`` command binds and listens on ``--listen`` first
thing when the command is ``serve`` and a public URL is configured: from that moment the
kernel completes connections and queues them (the listen backlog), and the receiver,
once started, serves them from the same socket: the command hands it to
:func:`practiceflow.service.serve` (``ServeOptions.listen_socket``), which closes it when no
webhook trigger needs it. Nothing is answered before the receiver can verify and store;
nothing is refused either.

A bind that fails (the port is taken, say by a first ``serve``) is ignored here: the normal
start-up reports it, after the clearer checks (such as the state file's lease).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Final

__all__ = ["EARLY_SOCKET", "bind_listen", "claim"]

_BACKLOG: Final = 128
#: Where the command line keeps the claimed socket for ``serve`` (``click.Context.meta``).
EARLY_SOCKET: Final = "practiceflow.early_socket"


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
    """Bind and listen on ``--listen`` / ``PRACTICEFLOW_LISTEN`` when a public URL is set.

    Args:
        environ: the environment (``os.environ`` when None).
        argv: the command line (``sys.argv[1:]`` when None); its ``--listen`` and
            ``--public-url`` win over the environment, as they do for ``serve``.

    Returns:
        The listening socket (its caller closes it, or hands it to the receiver), or None
        when nothing was claimed.
    """
    from practiceflow.service.netaddr import parse_listen  # light: no third-party import

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
    """A TCP socket bound to ``(host, port)`` and listening (port 0: any free port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local).
    """
    from practiceflow.service.netaddr import listen_tcp

    try:
        return listen_tcp(host, port, _BACKLOG)
    except OSError as exc:
        from practiceflow.errors import ConfigError

        message = f"webhook receiver on {host}:{port} cannot listen: {exc.strerror or exc}"
        raise ConfigError(message) from None
