"""The receiver's socket, bound before ``serve``'s slow imports (stdlib only), so that a sender
retrying meanwhile is queued by the kernel, not refused; the receiver serves from that socket
(``ServeOptions.listen_socket``). A failed bind is left to the normal start-up to report.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Final

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
    """Bind ``--listen`` / ``PRACTICEFLOW_LISTEN`` when a public URL is set (None: not claimed)."""
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
    """A listening TCP socket on ``(host, port)``; raises ``ConfigError`` when it cannot bind."""
    from practiceflow.service.netaddr import listen_tcp

    try:
        return listen_tcp(host, port, _BACKLOG)
    except OSError as exc:
        from practiceflow.errors import ConfigError

        message = f"webhook receiver on {host}:{port} cannot listen: {exc.strerror or exc}"
        raise ConfigError(message) from None
