"""The sandbox ASGI application: one pipeline for every request under ``/<region>/api/``.

In order: an armed fault may answer first (429, 500) or hold the answer back; then
authentication (401: the header pair or Basic, never both, secrets compared in constant
time and never echoed), the Client ID's rate budget (429, ``X-RateLimit-*`` on every
authenticated answer), write access (403); then the route, errors as problem details; a
``drop`` fault aborts the connection after the route acted. Also ``/_admin``, ``/openapi.json``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import json
import logging
import socket
import struct
import time
from collections.abc import Mapping, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router
from starlette.types import Message, Receive, Scope, Send

from practiceflow.sandbox.admin import AdminApp
from practiceflow.sandbox.config import REGIONS, Credential
from practiceflow.sandbox.openapi import build_openapi
from practiceflow.sandbox.problems import (
    ApiProblem,
    allow_header,
    log_disconnect,
    problem_response,
)
from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.sandbox.routes.common import CONTEXT_KEY, Ctx, endpoint
from practiceflow.sandbox.state import SandboxState

logger = logging.getLogger(__name__)

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    del receive
    raise ApiProblem(404, f"No route {scope['method']} {scope['path']}.")


async def _abort_connection(raw_send: Any) -> bool:
    """Reset the client's connection, unanswered: ASGI has no portable way, so this takes the
    asyncio transport of uvicorn's request cycle (``send``'s ``__self__``)."""
    transport = getattr(getattr(raw_send, "__self__", None), "transport", None)
    if transport is None:
        return False
    sock = transport.get_extra_info("socket")
    if sock is not None:
        # linger 0: the close becomes a TCP reset, as a crashed server would cause
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
    for _ in range(3):  # let connection_lost run so uvicorn knows not to answer
        await asyncio.sleep(0)
    return True


class SandboxApp:
    """The ASGI callable served by uvicorn."""

    def __init__(self, state: SandboxState) -> None:
        self.state = state
        routes = [Route(op.path, endpoint(op.handler), methods=[op.method]) for op in ALL_OPS]
        self._api = Router(routes=routes, redirect_slashes=False, default=_not_found)
        self._admin = AdminApp(state)
        self._openapi: bytes | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope (uvicorn runs without lifespan events)."""
        if scope["type"] != "http":
            return
        # Starlette routers raise HTTPException (turned into problem details here) instead
        # of answering plain text when an application is in the scope.
        scope = {**scope, "app": scope.get("app", self)}
        path: str = scope["path"]
        if path == "/openapi.json":
            if self._openapi is None:
                self._openapi = json.dumps(build_openapi()).encode()
            await Response(self._openapi, media_type="application/json")(scope, receive, send)
            return
        if path == "/_admin" or path.startswith("/_admin/"):
            await self._admin(scope, receive, send)
            return
        region, _, rest = path[1:].partition("/")
        if region in REGIONS and rest.startswith("api/"):
            await self._api_request(region, "/" + rest, scope, receive, send)
            return
        if path in ("", "/"):
            index = {
                "service": "practiceflow sandbox",
                "regions": {region: f"/{region}" for region in REGIONS},
                "openapi": "/openapi.json",
                "admin": "/_admin",
            }
            await JSONResponse(index)(scope, receive, send)
            return
        detail = f"No route {path}; API routes are under /{{region}}/api/v1 for {list(REGIONS)}."
        await problem_response(404, detail, path)(scope, receive, send)

    async def _api_request(
        self, region: str, rest: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        state = self.state
        method: str = scope["method"]
        path: str = scope["path"]
        started = time.perf_counter()
        generation = state.generation
        row: dict[str, Any] = {
            "at": state.now_text(),
            "region": region,
            "method": method,
            "path": rest,
            "query": scope.get("query_string", b"").decode("latin-1"),
            "clientId": None,
            "status": None,
            "fault": None,
        }
        extra_headers: dict[str, str] = {}
        swallow = False
        child: MutableMapping[str, Any] = dict(scope)
        child["root_path"] = scope.get("root_path", "") + f"/{region}"

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                row["status"] = message["status"]
                extra = [
                    (name.lower().encode(), value.encode()) for name, value in extra_headers.items()
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            if not swallow:
                await send(message)

        async def send_problem(
            status: int, detail: str, headers: Mapping[str, str] | None = None
        ) -> None:
            message = state.variants.pick("problem_message")  # how the body repeats detail
            answer = problem_response(status, detail, path, headers, message=message)
            await answer(scope, receive, send_wrapper)

        try:
            delay = state.answer_delay()
            if delay:  # the round trip of a real API
                await asyncio.sleep(delay)
            fault = state.faults.take(method, region, rest)
            if fault is not None:
                row["fault"] = fault.kind
                if fault.kind == "slow":
                    await asyncio.sleep(fault.delay)
                elif fault.kind == "server_error":
                    raise ApiProblem(500, "Injected server error.")
                elif fault.kind == "rate_limit":
                    limit = state.limiter.limits.per_minute
                    headers = {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0"}
                    if fault.retry_after is not None:
                        headers["Retry-After"] = str(fault.retry_after)
                        headers["X-RateLimit-Reset"] = str(fault.retry_after)
                    raise ApiProblem(429, "Injected rate limit.", headers)
            sent = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in scope.get("headers", [])
            }
            credential, number = authenticate(sent, region, state.clients)
            row["clientId"] = credential.client_id
            decision = state.limiter.hit(credential.client_id)
            extra_headers.update(decision.headers())
            if not decision.allowed:
                detail = f"Rate limit exceeded; retry after {decision.retry_after} seconds."
                raise ApiProblem(429, detail)
            if method not in _READ_METHODS and not credential.can_write:
                detail = "This API client is read-only (canWrite is false); writes need canWrite."
                raise ApiProblem(403, detail)
            child[CONTEXT_KEY] = Ctx(state, state.practice(region, number), credential, region)
            swallow = fault is not None and fault.kind == "drop"
            await self._api(child, receive, send_wrapper)
            if swallow:
                if await _abort_connection(send):
                    return
                swallow = False  # no transport to drop: answer 500 rather than hang
                raise ApiProblem(500, "Injected drop fault (the request was performed).")
        except ApiProblem as problem:
            if swallow and row["status"] is None:
                swallow = False
            await send_problem(problem.status, problem.detail, problem.headers)
        except HTTPException as exc:
            allow = {"Allow": allow_header(self._api, child)} if exc.status_code == 405 else {}
            await send_problem(exc.status_code, str(exc.detail), allow)
        except ClientDisconnect:
            log_disconnect(logger, method, path)
        except Exception:
            logger.exception("sandbox route %s %s failed", method, path)
            if row["status"] is None:
                await send_problem(500, "Unexpected sandbox error.")
        finally:
            row["ms"] = round((time.perf_counter() - started) * 1000, 2)
            state.log_request(row, generation)


def read_credentials(headers: Mapping[str, str]) -> tuple[str, str]:
    """``(client_id, secret)`` from lowercase headers; 401 when missing, malformed or mixed."""
    header_id = headers.get("x-svc-auth-id")
    header_key = headers.get("x-svc-auth-key")
    authorization = headers.get("authorization")
    uses_headers = header_id is not None or header_key is not None
    if uses_headers and authorization is not None:
        detail = (
            "Both X-SVC-Auth-* headers and an Authorization header were sent; use one "
            "authentication method per request."
        )
        raise ApiProblem(401, detail)
    if uses_headers:
        if not header_id or not header_key:
            detail = "Both X-SVC-Auth-ID and X-SVC-Auth-Key are required."
            raise ApiProblem(401, detail)
        return header_id, header_key
    if authorization is None:
        detail = "Credentials are missing: send X-SVC-Auth-ID/X-SVC-Auth-Key or HTTP Basic."
        raise ApiProblem(401, detail)
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        detail = "Only the Basic scheme is supported in the Authorization header."
        raise ApiProblem(401, detail)
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        detail = "The Basic credentials are not valid base64 of 'ClientID:ClientSecret'."
        raise ApiProblem(401, detail) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon or not client_id or not secret:
        detail = "The Basic credentials must be 'ClientID:ClientSecret'."
        raise ApiProblem(401, detail)
    return client_id, secret


def authenticate(
    headers: Mapping[str, str], region: str, clients: Mapping[str, tuple[str, int, Credential]]
) -> tuple[Credential, int]:
    """The active client of ``region`` the credentials name, and its practice (``clients``: by
    Client ID); 401 when missing, mixed, unknown, wrong, inactive or of another region."""
    client_id, secret = read_credentials(headers)
    found = clients.get(client_id)
    if found is None:
        raise ApiProblem(401, "The Client ID or secret is not valid.")
    home, number, credential = found
    if not hmac.compare_digest(credential.secret.encode(), secret.encode()):
        raise ApiProblem(401, "The Client ID or secret is not valid.")
    if home != region:
        detail = "The credentials are not valid in this region; use the practice's region."
        raise ApiProblem(401, detail)
    if not credential.active:
        raise ApiProblem(401, "The API client is inactive.")
    return credential, number
