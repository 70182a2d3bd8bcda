"""What every route module shares: the route table entry, the request context, list query
parameters (spec section 8) and envelope, bad input as 400/404 problems, and the helpers that
play the chosen answer of an open question (``variants.py``) over a route's default answer."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

import pydantic
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from practiceflow.sandbox.clock import SandboxClock, parse_time
from practiceflow.sandbox.config import Credential
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.state import SandboxState
from practiceflow.sandbox.store import Entity, Practice

CONTEXT_KEY = "practiceflow.sandbox"
Handler = Callable[["Ctx", Request], Awaitable[Response]]
ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)
T = TypeVar("T")
MAX_PAGE_NUMBER = 10_000
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_BOOLS = {"true": True, "1": True, "false": False, "0": False}


@dataclass(frozen=True)
class Param:
    """A query parameter, as the OpenAPI document describes it."""

    name: str
    type: str = "string"
    format: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    description: str = ""
    required: bool = False


PAGE_NUMBER = Param("pageNumber", "integer", minimum=1, maximum=10000, description="1-based page")
PAGE_SIZE = Param("pageSize", "integer", minimum=1, maximum=100, description="rows per page")
LAST_UPDATED = Param(
    "lastUpdated", "string", "date-time", description="records changed at or after (UTC)"
)


@dataclass(frozen=True)
class Op:
    """One operation the sandbox serves (``path`` under the region prefix, such as
    ``/api/v1/bills/{billingId:int}``) and what the OpenAPI document says of it:
    ``statuses`` besides 401/429/500 (:meth:`answers` derives them when not given),
    ``guess`` when the spec does not show its shape (GUESSES.md), ``produces`` the media
    type of a 2xx answer."""

    method: str
    path: str
    handler: Handler
    summary: str
    tag: str
    body: type[pydantic.BaseModel] | None = None
    query: tuple[Param, ...] = ()
    statuses: tuple[int, ...] = ()
    guess: bool = False
    produces: str = "application/json"
    body_optional: bool = False

    def answers(self) -> tuple[int, ...]:
        """``statuses``, else: a read's 200, 400 for a query, 404 for a record in the path; a
        write's 201 (POST) or 200, 400 for a body, 403, 404 for a record in path or body."""
        if self.statuses:
            return self.statuses
        named = "{" in self.path
        if self.method == "GET":
            return (200, *([400] if self.query else []), *([404] if named else []))
        if self.body is not None:
            named = named or "entityKey" in self.body.model_fields
        ok = 201 if self.method == "POST" else 200
        return (ok, *([400] if self.body else []), 403, *([404] if named else []))


@dataclass(frozen=True)
class Ctx:
    """Who is asking, where: set by the API pipeline before a route runs."""

    state: SandboxState
    practice: Practice
    credential: Credential
    region: str


def endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of ``handler``: it hands over the context the pipeline set."""

    async def call(request: Request) -> Response:
        return await handler(request.scope[CONTEXT_KEY], request)

    return call


def ok(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response."""
    return JSONResponse(data, status_code=status, headers=dict(headers or {}))


def settings_op(
    path: str, name: str, summary: str, tag: str, rows: Callable[[Practice], Any] | None = None
) -> Op:
    """A guessed ``GET`` of one of the practice's fixed lists, ``rows(practice)`` (default: its
    attribute ``name``); ``name`` is the handler's (the OpenAPI ``operationId`` carries it)."""

    async def handler(ctx: Ctx, request: Request) -> Response:
        return ok(rows(ctx.practice) if rows else getattr(ctx.practice, name))

    handler.__name__ = name
    return Op("GET", path, handler, summary, tag, guess=True)


def _describe(error: Mapping[str, Any]) -> str:
    location = ".".join(str(part) for part in error.get("loc", ())) or "body"
    got = error.get("input")
    shown = json.dumps(got)[:60] if isinstance(got, (str, int, float, bool)) else type(got).__name__
    return f"{location}: {error.get('msg', 'invalid')} (got {shown})"


async def read_body(request: Request, model: type[ModelT], optional: bool = False) -> ModelT:
    """The JSON body validated by ``model`` (``{}`` when ``optional`` and missing), else 400."""
    raw = await request.body()
    if not raw and not optional:
        raise ApiProblem(400, "body: missing; expected a JSON object")
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ApiProblem(400, "The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        detail = f"body: got a JSON {type(data).__name__}; expected an object"
        raise ApiProblem(400, detail)
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        detail = "; ".join(_describe(error) for error in exc.errors()[:5])
        raise ApiProblem(400, detail) from None


def found(table: Mapping[Any, T], key: object, what: str, where: str = " in this practice") -> T:
    """``table[key]``, or a 404 problem saying the ``what`` was not found."""
    row = table.get(key)
    if row is None:
        raise ApiProblem(404, f"{what} {key} was not found{where}.")
    return row


def entity_or_404(practice: Practice, key: object) -> Entity:
    """The entity with this key (a UUID or its text), or a 404 problem."""
    return found(practice.entities, str(key), "Entity")


#: Rows per page of a list that ignores ``pageSize`` (topic ``page_size.*``).
IGNORED_PAGE_SIZE = 20
_ID_FIELDS = ("billingID", "runID", "entityID", "clientID")


def paged(ctx: Ctx, name: str, rows: Sequence[Any], query: Mapping[str, str]) -> Response:
    """A ``pageSize`` list's answer (one page of ``rows`` in the envelope, or all as a bare
    array), as topics ``page_size.<name>`` and ``list_shape.<name>`` say."""
    variants = ctx.state.variants
    if variants.as_dict().get(f"list_shape.{name}") == "plain":
        return ok(list(rows))
    number, size = page_number(query), page_size(query)
    if variants.pick(f"page_size.{name}") == "ignored":
        size = IGNORED_PAGE_SIZE
    return ok(envelope(rows, number, size))


def created(ctx: Ctx, record: Any, key: str, headers: Mapping[str, str]) -> Response:
    """A create's 201 as topic ``create_answer`` says: the record, its ``key`` only, or no body."""
    answer = ctx.state.variants.pick("create_answer")
    if answer == "empty":
        return Response(status_code=201, headers=dict(headers))
    if answer == "id_only" and isinstance(record, Mapping):
        return ok({key: record.get(key)}, 201, headers)
    return ok(record, 201, headers)


def id_case(ctx: Ctx, record: Any) -> Any:
    """``record`` (nested too) with ``...ID`` spelled ``...Id`` if topic ``field_case`` says."""
    if ctx.state.variants.pick("field_case") == "ID":
        return record
    return _rename(record)


def _rename(value: Any) -> Any:
    if isinstance(value, list):
        return [_rename(item) for item in value]
    if isinstance(value, dict):
        return {
            (name[:-2] + "Id" if name in _ID_FIELDS else name): _rename(item)
            for name, item in value.items()
        }
    return value


def status_text(ctx: Ctx, status: Any) -> Any:
    """A status value in the letter case of topic ``status_case``."""
    if isinstance(status, str) and ctx.state.variants.pick("status_case") == "upper":
        return status.upper()
    return status


def _integer(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        detail = f"{name}: got {raw!r}; expected an integer from {low} to {high}"
        raise ApiProblem(400, detail) from None
    if not low <= value <= high:
        detail = f"{name}: got {value}; expected an integer from {low} to {high}"
        raise ApiProblem(400, detail)
    return value


def page_number(query: Mapping[str, str]) -> int:
    """``pageNumber``: 1-based, default 1, at most 10000 (400 otherwise)."""
    return _integer(query, "pageNumber", 1, 1, MAX_PAGE_NUMBER)


def page_size(query: Mapping[str, str]) -> int:
    """``pageSize`` where supported: default 50, 1 to 100 (400 otherwise)."""
    return _integer(query, "pageSize", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)


def since(query: Mapping[str, str], clock: SandboxClock, name: str = "lastUpdated") -> float | None:
    """``lastUpdated`` as Unix seconds, if given; 400 when unparsable or after the clock's now."""
    value = _parsed(query, name, False, parse_time, "a UTC ISO 8601 datetime")
    if value is not None and value > clock.now():
        detail = f"{name}: got {query[name]!r}, which is in the future; it must not be after now"
        raise ApiProblem(400, detail)
    return value


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """A boolean query parameter (``true``/``false``, ``1``/``0``); 400 for any other value."""
    return _parsed(query, name, False, lambda raw: _BOOLS[raw.lower()], "true or false")


def _parsed(
    query: Mapping[str, str], name: str, required: bool, parse: Callable[[str], T], what: str
) -> T | None:
    raw = query.get(name)
    if raw is None:
        if required:
            raise ApiProblem(400, f"{name} is required: {what}")
        return None
    try:
        return parse(raw)
    except (KeyError, ValueError, OverflowError):
        raise ApiProblem(400, f"{name}: got {raw!r}; expected {what}") from None


def _date(raw: str) -> date:
    if not _DATE.fullmatch(raw):
        raise ValueError(raw)
    return date.fromisoformat(raw)


def query_date(query: Mapping[str, str], name: str, required: bool = False) -> date | None:
    """A date parameter (``YYYY-MM-DD``; an empty value is not one), 400 when bad."""
    return _parsed(query, name, required, _date, "a date YYYY-MM-DD")


def query_uuid(query: Mapping[str, str], name: str, required: bool = False) -> str | None:
    """A uuid parameter in canonical form (an empty value is not one), 400 when bad."""
    return _parsed(query, name, required, lambda raw: str(uuid.UUID(raw)), "a uuid")


def fixed_page(ctx: Ctx, rows: list[T], number: int) -> list[T]:
    """Page ``number`` of ``rows`` at the server's fixed page size."""
    size = ctx.state.config.page_size
    return rows[(number - 1) * size : number * size]


def envelope(rows: Sequence[Any], number: int, size: int) -> dict[str, Any]:
    """The (guessed) ``pageSize`` list envelope of page ``number`` of ``rows``."""
    start = (number - 1) * size
    return {
        "items": list(rows[start : start + size]),
        "pageNumber": number,
        "pageSize": size,
        "totalCount": len(rows),
        "hasMore": start + size < len(rows),
    }
