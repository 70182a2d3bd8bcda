"""The ``Allow`` header of a 405: every method any route of the path serves.

Starlette answers a wrong method with the methods of the first route whose path matched;
the sandbox registers one route per operation, so a path served by GET and POST would
advertise only one of them. RFC 9110 (section 15.5.6) wants them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.routing import Match, Route, Router


def allow_header(router: Router, scope: Mapping[str, Any]) -> str:
    """The methods ``router`` serves on the path of ``scope``, sorted, comma-separated.

    Args:
        router: the router that answered 405.
        scope: the ASGI scope it was given (its ``path`` and ``root_path``).

    Returns:
        Such as ``GET, HEAD, POST`` (HEAD wherever GET is served); empty when no route
        matches the path.
    """
    methods: set[str] = set()
    probe = {**scope, "type": "http"}
    for route in router.routes:
        if isinstance(route, Route) and route.methods:
            match, _ = route.matches(probe)
            if match is not Match.NONE:
                methods |= route.methods
    return ", ".join(sorted(methods))
