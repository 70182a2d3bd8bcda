"""Error answers of the API turned into the exception tree of :mod:`practiceflow.errors`.

The spec (section 7) gives a problem-details body (``type``, ``title``, ``status``,
``detail``, ``instance``, all nullable, plus ``message`` on validation and not-found
answers). Bodies that are not JSON are tolerated: the error then carries what little
could be read (a short plain-text body as ``detail``; never HTML).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from practiceflow.errors import (
    ApiError,
    AuthError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
    WriteAccessError,
)

#: The exception class for each status the spec names; other 5xx are ServerError and
#: other 4xx plain ApiError.
ERRORS_BY_STATUS: Final[Mapping[int, type[ApiError]]] = {
    400: ValidationError,
    401: AuthError,
    403: WriteAccessError,
    404: NotFoundError,
    422: ValidationError,
    429: RateLimitError,
}

_TEXT_LIMIT: Final = 300


def parse_problem(text: str, content_type: str | None) -> dict[str, Any]:
    """Read an error body into a problem-details dict, whatever it is."""
    stripped = text.strip()
    if not stripped:
        return {}
    try:
        data = json.loads(stripped)
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


def error_for_status(
    method: str,
    path: str,
    status: int,
    problem: Mapping[str, Any],
    *,
    retry_after: float | None = None,
    base_url: str | None = None,
) -> ApiError:
    """Build the exception for an error answer."""
    if status == 429:
        hint = "the Client ID's rate budget is spent"
        if retry_after is not None:
            hint += f"; the server asked to wait {retry_after:g}s"
        return RateLimitError(method, path, status, problem, retry_after=retry_after, hint=hint)
    if status >= 500:
        return ServerError(method, path, status, problem)
    cls = ERRORS_BY_STATUS.get(status, ApiError)
    if cls is AuthError and base_url:
        return AuthError(
            method, path, status, problem, hint=f"{AuthError.default_hint}; sent to {base_url}"
        )
    return cls(method, path, status, problem)
