"""The console's guards: where it may listen, who may read it, which POSTs are genuine.

Loopback by default (any other address needs a token); the token is checked on every request
when configured; every form carries ``HMAC(key, session id | purpose)`` and a POST without a
matching one is refused with 403, server-side.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.requests import Request

from practiceflow.errors import ConfigError
from practiceflow.service.netaddr import is_loopback

#: Cookie holding the visitor's random session id (the CSRF tokens are bound to it).
SESSION_COOKIE = "pf_console_session"
#: Cookie holding the console token after a visit with ``?token=``.
TOKEN_COOKIE = "pf_console_token"  # noqa: S105 - a cookie name, not a secret
#: Name of the hidden form field carrying the CSRF token.
CSRF_FIELD = "csrf_token"


_REFUSAL = (
    "console: got listen address {host!r} with no token; anyone who can reach it could "
    "resolve steps. Pass --console-token (or PRACTICEFLOW_CONSOLE_TOKEN), or listen on "
    "127.0.0.1"
)


def check_bind(host: str, token: str | None, refusal: str = _REFUSAL) -> None:
    """Refuse (ConfigError) to listen beyond loopback without a token; ``refusal`` is the
    message, with ``{host}`` (``mcp --listen`` has its own)."""
    if not is_loopback(host) and not (token and token.strip()):
        raise ConfigError(refusal.format(host=host))


@dataclass
class Guard:
    """Token and CSRF checks of one console (see the module docstring)."""

    token: str | None = None
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def allowed(self, request: Request) -> bool:
        """Whether the request carries the token (always True without one)."""
        if not self.token:
            return True
        header = request.headers.get("authorization", "")
        offered = header[7:] if header.lower().startswith("bearer ") else ""
        offered = offered or request.cookies.get(TOKEN_COOKIE, "")
        offered = offered or request.query_params.get("token", "")
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())

    @staticmethod
    def session_of(request: Request) -> str | None:
        """The visitor's session id, if the cookie is there."""
        value = request.cookies.get(SESSION_COOKIE)
        return value if value and len(value) >= 16 else None

    @staticmethod
    def new_session() -> str:
        """A fresh random session id."""
        return secrets.token_urlsafe(24)

    def csrf_token(self, session: str, purpose: str) -> str:
        """The form token of a session for one purpose (such as ``resolve:RUN:STEP``)."""
        message = f"{session}|{purpose}".encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def csrf_ok(self, request: Request, purpose: str, offered: str | None) -> bool:
        """Check a POST's CSRF token and, when the browser sends one, its ``Origin``."""
        session = self.session_of(request)
        if session is None or not offered:
            return False
        origin = request.headers.get("origin")
        if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
            return False
        expected = self.csrf_token(session, purpose)
        return hmac.compare_digest(expected.encode(), offered.encode())
