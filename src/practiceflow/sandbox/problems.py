"""Problem-details error bodies (spec section 7) and the exception handlers raise."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from starlette.responses import Response

#: Title of each status, as the problem-details ``title``.
TITLES: Mapping[int, str] = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
}

_RFC_SECTIONS: Mapping[int, str] = {
    400: "15.5.1",
    401: "15.5.2",
    403: "15.5.4",
    404: "15.5.5",
    405: "15.5.6",
    409: "15.5.10",
    429: "",
    500: "15.6.1",
}


class ApiProblem(Exception):
    """Raised by a route to answer with a problem-details body.

    Attributes:
        status: the HTTP status.
        detail: what went wrong, in words (also sent as ``message`` for 400 and 404).
        headers: extra response headers.
    """

    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


def problem_body(
    status: int, detail: str, instance: str, message: str = "some"
) -> dict[str, object]:
    """Build a problem-details body.

    Args:
        status: the HTTP status.
        detail: the explanation.
        instance: the request path (no query string).
        message: variant ``problem_message``: ``some`` (400 and 404), ``none`` or ``all``.

    Returns:
        ``type``, ``title``, ``status``, ``detail``, ``instance``, and ``message`` for 400
        and 404.
    """
    section = _RFC_SECTIONS.get(status, "")
    kind = (
        f"https://tools.ietf.org/html/rfc9110#section-{section}"
        if section
        else "https://tools.ietf.org/html/rfc6585#section-4"
    )
    body: dict[str, object] = {
        "type": kind,
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    if message == "all" or (message == "some" and status in (400, 404)):
        body["message"] = detail
    return body


def problem_response(
    status: int,
    detail: str,
    instance: str,
    headers: Mapping[str, str] | None = None,
    message: str = "some",
) -> Response:
    """A ``application/problem+json`` response.

    Args:
        status: the HTTP status.
        detail: the explanation.
        instance: the request path.
        headers: extra headers (``Retry-After`` ...).
        message: as for :func:`problem_body`.

    Returns:
        The response.
    """
    content = json.dumps(problem_body(status, detail, instance, message)).encode()
    return Response(
        content,
        status_code=status,
        headers=dict(headers or {}),
        media_type="application/problem+json",
    )


def log_disconnect(logger: logging.Logger, method: str, path: str) -> None:
    """Log, as one INFO line, a client that hung up before its request was read.

    Nothing is answered (nobody is listening); it is the client's doing, not a fault of
    the sandbox, so it is neither an error nor a traceback.

    Args:
        logger: the logger of the surface that noticed it.
        method: the request's method.
        path: the request's path (no query string: it may carry values of a caller).
    """
    logger.info("%s %s: the client disconnected before its request was read", method, path)
