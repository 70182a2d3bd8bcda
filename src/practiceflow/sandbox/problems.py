"""Problem-details error bodies (spec section 7), the exception routes raise for them, and
the ``Allow`` header of a 405: every method of the path (RFC 9110 15.5.6), where Starlette
names only those of the first matching route (the sandbox has one route per operation)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response
from starlette.routing import Match, Route, Router

#: Title and RFC 9110 section of each status, for the problem-details ``title`` and ``type``.
_STATUSES: Mapping[int, tuple[str, str]] = {
    400: ("Bad Request", "15.5.1"),
    401: ("Unauthorized", "15.5.2"),
    403: ("Forbidden", "15.5.4"),
    404: ("Not Found", "15.5.5"),
    405: ("Method Not Allowed", "15.5.6"),
    409: ("Conflict", "15.5.10"),
    429: ("Too Many Requests", ""),
    500: ("Internal Server Error", "15.6.1"),
}


class ApiProblem(Exception):
    """Raised by a route to answer ``status`` with a problem-details body saying ``detail``."""

    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


def problem_response(
    status: int,
    detail: str,
    instance: str,
    headers: Mapping[str, str] | None = None,
    message: str = "some",
) -> Response:
    """An ``application/problem+json`` answer; ``instance`` is the request path. ``message``
    (variant ``problem_message``) repeats ``detail`` on 400 and 404 (``some``), never or all."""
    title, section = _STATUSES.get(status, ("Error", ""))
    where = f"rfc9110#section-{section}" if section else "rfc6585#section-4"
    body: dict[str, object] = {
        "type": f"https://tools.ietf.org/html/{where}",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    if message == "all" or (message == "some" and status in (400, 404)):
        body["message"] = detail
    return Response(
        json.dumps(body).encode(), status, dict(headers or {}), "application/problem+json"
    )


def log_disconnect(logger: logging.Logger, method: str, path: str) -> None:
    """Log a client that hung up before its request was read: one INFO line (not our fault)."""
    # the path only: a query string may carry values of a caller
    logger.info("%s %s: the client disconnected before its request was read", method, path)


def allow_header(router: Router, scope: Mapping[str, Any]) -> str:
    """The methods ``router`` serves on the path of ``scope``, such as ``GET, HEAD, POST``."""
    methods: set[str] = set()
    probe = {**scope, "type": "http"}
    for route in router.routes:
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(probe)
            if match is not Match.NONE:
                methods |= route.methods
    return ", ".join(sorted(methods))
