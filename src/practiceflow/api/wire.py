"""What goes over the wire around one request: the result types :class:`~practiceflow.api.Client`
returns, and conversions that never quote anything that could hold a secret. An error answer
becomes an :mod:`practiceflow.errors` exception from its problem-details body (spec section 7).
"""

from __future__ import annotations

import hashlib
import json as jsonlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import requests
from pydantic import BaseModel

from practiceflow.api.retry import refused_before_sending
from practiceflow.budget.rate_budget import parse_retry_after
from practiceflow.errors import (
    ApiError,
    AuthError,
    ConfigError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)

#: The exception class of the other statuses the spec names (401, 429 and 5xx have their
#: own branch in :func:`error_from_response`); any other 4xx is a plain ApiError.
ERRORS_BY_STATUS: Final[Mapping[int, type[ApiError]]] = {
    400: ValidationError,
    403: WriteAccessError,
    404: NotFoundError,
    422: ValidationError,
}

_TEXT_LIMIT: Final = 300


def parse_problem(text: str, content_type: str | None) -> dict[str, Any]:
    """Read an error body into a problem-details dict, whatever it is."""
    stripped = text.strip()
    if not stripped:
        return {}
    try:
        data = jsonlib.loads(stripped)
    except (ValueError, RecursionError):  # absurd nesting recurses
        data = None
    else:
        if isinstance(data, dict):
            return data
        if isinstance(data, str):
            return {"message": data[:_TEXT_LIMIT]}
        return {}
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind in ("text/plain", "") and not stripped.startswith("<"):
        return {"detail": " ".join(stripped.split())[:_TEXT_LIMIT]}
    return {}


@dataclass(frozen=True)
class ApiResponse:
    """A successful answer (2xx or 3xx): status, headers (case-insensitive), the parsed JSON
    body (None when it is empty or not JSON) and the body as text."""

    status: int
    headers: Mapping[str, str]
    data: Any
    text: str


@dataclass(frozen=True)
class Download:
    """A body written to disk by :meth:`Client.download`: where, its size in bytes, the
    lower-case hex SHA-256 of its content, and the ``Content-Type`` the server sent, if any."""

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


def save_body(response: requests.Response, target: Path) -> Download:
    """Stream a body to ``target`` in chunks; the file appears only once complete."""
    digest = hashlib.sha256()
    size = 0
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in response.iter_content(chunk_size=64 * 1024):
                handle.write(chunk)
                digest.update(chunk)
                size += len(chunk)
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    return Download(target, size, digest.hexdigest(), response.headers.get("Content-Type"))


def error_from_response(
    method: str, path: str, response: requests.Response, base_url: str
) -> ApiError:
    """The error an error answer stands for (its body read, the response closed)."""
    try:
        text = response.text
    except requests.RequestException:
        text = ""
    finally:
        response.close()
    status = response.status_code
    problem = parse_problem(text, response.headers.get("Content-Type"))
    if status == 429:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        hint = "the Client ID's rate budget is spent"
        if retry_after is not None:
            hint += f"; the server asked to wait {retry_after:g}s"
        return RateLimitError(method, path, status, problem, retry_after=retry_after, hint=hint)
    if status >= 500:
        return ServerError(method, path, status, problem)
    if status == 401:
        hint = f"{AuthError.default_hint}; sent to {base_url}"
        return AuthError(method, path, status, problem, hint=hint)
    return ERRORS_BY_STATUS.get(status, ApiError)(method, path, status, problem)


@dataclass(frozen=True)
class RequestHooks:
    """What a caller is told about each request a client sends (httpx's event hooks).

    Attributes:
        on_send: called with ``{"method", "path", "params", "json", "headers"}`` (as the
            caller passed them) once the rate budget admits a request, just before it
            leaves (again on a retry, and for every page). If it raises, nothing is sent.
            The runner journals a write's ``sent`` here.
        on_refused: called after a 429 (the API did not act), before the request waits to
            be sent again. The runner journals a write back to ``pending`` here.
    """

    on_send: Callable[[dict[str, Any]], None] | None = None
    on_refused: Callable[[], None] | None = None
