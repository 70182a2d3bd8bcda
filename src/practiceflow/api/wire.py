"""What goes over the wire around one request: result types and small conversions.

:class:`ApiResponse` and :class:`Download` are what :class:`~practiceflow.api.Client`
returns; the functions check a request path, encode a JSON body, read a response body,
and describe a ``requests`` failure without quoting anything that could hold a secret.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import requests
from pydantic import BaseModel

from practiceflow.api.retry import refused_before_sending
from practiceflow.errors import ConfigError, RateLimitError

__all__ = [
    "UNSENDABLE",
    "ApiResponse",
    "Download",
    "clean_path",
    "describe_exception",
    "log_path",
    "parse_body",
    "unsendable_reason",
    "wire_json",
    "with_hint",
]


@dataclass(frozen=True)
class ApiResponse:
    """A successful answer.

    Attributes:
        status: the HTTP status (2xx or 3xx).
        headers: the response headers (case-insensitive).
        data: the parsed JSON body, or None when the body is empty or not JSON.
        text: the body as text.
    """

    status: int
    headers: Mapping[str, str]
    data: Any
    text: str


@dataclass(frozen=True)
class Download:
    """A body written to disk by :meth:`Client.download`.

    Attributes:
        path: where the file is.
        size: its size in bytes.
        sha256: lower-case hex SHA-256 of its content.
        content_type: the ``Content-Type`` the server sent, if any.
    """

    path: Path
    size: int
    sha256: str
    content_type: str | None


def clean_path(path: str) -> str:
    """Return ``path`` if it is a path under the base URL (``/api/...``), else raise ConfigError."""
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        message = (
            f"request path: got {path!r}; expected a path under the base URL starting with "
            "'/', such as '/api/v1/bills'"
        )
        raise ConfigError(message)
    return path


def log_path(path: str) -> str:
    """The path as it may appear in logs and errors: no query string, no fragment."""
    return path.split("?", 1)[0].split("#", 1)[0]


def wire_json(body: Any) -> Any:
    """A JSON body with pydantic models dumped by alias (the spec's field names)."""
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(body, list):
        return [wire_json(item) for item in body]
    return body


def parse_body(response: requests.Response) -> tuple[Any, str]:
    """Return (parsed JSON or None, body text) of a successful answer."""
    content = response.content
    if not content:
        return None, ""
    content_type = response.headers.get("Content-Type", "").lower()
    if "json" not in content_type and content.lstrip()[:1] not in (b"{", b"["):
        return None, response.text
    # JSON is UTF-8 (RFC 8259); skipping requests' charset guessing saves most of the
    # client's per-call overhead.
    text = content.decode(response.encoding or "utf-8", errors="replace")
    try:
        return jsonlib.loads(text), text
    except ValueError:
        return None, text


#: Errors raised while building the request: nothing was sent, and retrying cannot help.
UNSENDABLE: Final = (
    requests.exceptions.InvalidJSONError,
    requests.exceptions.InvalidHeader,
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
)


def unsendable_reason(exc: Exception) -> str:
    """Why a request could not be built, without quoting a header value."""
    if isinstance(exc, requests.exceptions.InvalidHeader):
        # Its text quotes the header value, which may be the secret.
        return "a header value is invalid (check for spaces or line breaks in the credentials)"
    if isinstance(exc, requests.exceptions.InvalidJSONError):
        return f"the body is not JSON-serialisable ({exc})"
    return f"{type(exc).__name__}"


def describe_exception(exc: requests.RequestException) -> str:
    """A short reason for a ``requests`` failure, safe for logs and errors."""
    if isinstance(exc, requests.ConnectTimeout):
        return "connecting timed out"
    if isinstance(exc, requests.ReadTimeout):
        return "no answer before the timeout"
    if refused_before_sending(exc):
        return "the connection could not be opened (refused or host unknown)"
    if isinstance(exc, requests.ConnectionError):
        return "the connection broke"
    return f"the answer could not be read ({type(exc).__name__})"


def with_hint(error: RateLimitError, extra: str) -> RateLimitError:
    """The same 429 error with ``extra`` appended to its hint (the message is rebuilt)."""
    hint = f"{error.hint}; {extra}" if error.hint else extra
    return RateLimitError(
        error.method,
        error.path,
        error.status,
        error.problem,
        retry_after=error.retry_after,
        hint=hint,
    )
