"""The credentials and the spec's two authentication methods (section 5), never mixed on
one request. :class:`Secret` masks a credential in ``repr``/``str``/f-strings; each method
is a ``requests`` ``AuthBase`` that sets only its own headers, removes the other's, and
stops ``Session.auth`` or ``~/.netrc`` credentials being added.
"""

from __future__ import annotations

import base64
import hmac
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar, Final, NoReturn

from requests import PreparedRequest
from requests.auth import AuthBase

from practiceflow.errors import ConfigError

#: What is shown wherever a secret would have been.
MASK: Final = "***"


class Secret:
    """A credential whose ``repr`` and ``str`` are masked.

    Args:
        value: the secret text.

    Example:
        >>> s = Secret("hunter2")
        >>> s, str(s), f"{s}"
        (Secret('***'), '***', '***')
        >>> s.reveal()
        'hunter2'
    """

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            # Untyped callers (YAML, environment readers) can still get here.
            message = f"Secret: got {type(value).__name__}; expected str"  # type: ignore[unreachable]
            raise TypeError(message)
        self._value = value

    def reveal(self) -> str:
        """Return the secret text itself; only for building the request that needs it."""
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    def __str__(self) -> str:
        return MASK

    def __format__(self, format_spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        # Constant time, so comparing secrets leaks nothing through timing.
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> NoReturn:
        # Pickling would write the plain value into a file or a queue message.
        message = "a Secret cannot be pickled; store where to read it from instead"
        raise TypeError(message)


AUTH_ID_HEADER: Final = "X-SVC-Auth-ID"
AUTH_KEY_HEADER: Final = "X-SVC-Auth-Key"
AUTHORIZATION: Final = "Authorization"
#: Every header that carries credentials, lower-cased.
AUTH_HEADER_NAMES: Final = frozenset(
    name.lower() for name in (AUTH_ID_HEADER, AUTH_KEY_HEADER, AUTHORIZATION)
)
#: Headers whose value reveals the secret, lower-cased; masked in any description.
SECRET_HEADER_NAMES: Final = frozenset(name.lower() for name in (AUTH_KEY_HEADER, AUTHORIZATION))


class AuthMethod(AuthBase, ABC):
    """One way of presenting the Client ID and secret on a request."""

    name: ClassVar[str]

    def __init__(self, client_id: str, client_secret: Secret) -> None:
        self.client_id = client_id
        self._secret = client_secret

    @abstractmethod
    def credential_headers(self) -> dict[str, str]:
        """The headers this method sends (values unmasked); nothing else is added."""

    def __call__(self, r: PreparedRequest) -> PreparedRequest:
        # Drop whatever any other source put there, so the two methods never meet.
        for name in list(r.headers):
            if name.lower() in AUTH_HEADER_NAMES:
                del r.headers[name]
        r.headers.update(self.credential_headers())
        return r

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client_id={self.client_id!r}, client_secret={MASK!r})"


class HeaderAuth(AuthMethod):
    """Method A (the default): ``X-SVC-Auth-ID`` and ``X-SVC-Auth-Key`` headers."""

    name: ClassVar[str] = "header"

    def credential_headers(self) -> dict[str, str]:
        """Return the two ``X-SVC-Auth-*`` headers."""
        return {AUTH_ID_HEADER: self.client_id, AUTH_KEY_HEADER: self._secret.reveal()}


class BasicAuth(AuthMethod):
    """Method B: ``Authorization: Basic base64(ClientID:ClientSecret)``."""

    name: ClassVar[str] = "basic"

    def credential_headers(self) -> dict[str, str]:
        """Return the ``Authorization: Basic ...`` header."""
        raw = f"{self.client_id}:{self._secret.reveal()}".encode()
        return {AUTHORIZATION: "Basic " + base64.b64encode(raw).decode("ascii")}


#: Authentication methods by name.
AUTH_REGISTRY: Final[Mapping[str, type[AuthMethod]]] = {
    HeaderAuth.name: HeaderAuth,
    BasicAuth.name: BasicAuth,
}


def make_auth(name: str, client_id: str, client_secret: Secret) -> AuthMethod:
    """Build the authentication method called ``name`` (ConfigError for an unknown one)."""
    try:
        cls = AUTH_REGISTRY[name]
    except KeyError:
        message = f"auth method: got {name!r}; valid values are {', '.join(AUTH_REGISTRY)}"
        raise ConfigError(message) from None
    return cls(client_id, client_secret)


def mask_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Copy headers with every secret-bearing value replaced by ``***``."""
    return {k: (MASK if k.lower() in SECRET_HEADER_NAMES else v) for k, v in headers.items()}


def reject_credential_headers(headers: Mapping[str, str]) -> None:
    """ConfigError for caller headers that carry credentials (``Authorization``,
    ``X-SVC-Auth-*``): they would mix with or bypass the auth method."""
    bad = sorted(name for name in headers if name.lower() in AUTH_HEADER_NAMES)
    if bad:
        message = (
            f"extra headers: got {', '.join(bad)}; credentials are added by the client's "
            "auth method (auth_method='header' or 'basic'), not passed as headers"
        )
        raise ConfigError(message)
