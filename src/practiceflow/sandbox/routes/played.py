"""How routes play the chosen answer of each open question (``variants.py``): a route
builds its default answer, then passes it through the helper of one topic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.responses import Response

from practiceflow.sandbox.paging import envelope, page_number, page_size
from practiceflow.sandbox.routes.common import Ctx, ok

#: Rows per page of a list that ignores ``pageSize`` (topic ``page_size.*``).
IGNORED_PAGE_SIZE = 20
_ID_FIELDS = ("billingID", "runID", "entityID", "clientID")


def paged(ctx: Ctx, name: str, rows: Sequence[Any], query: Mapping[str, str]) -> Response:
    """A ``pageSize`` list's answer (one page of ``rows`` in the envelope, or all as a bare
    array), as topics ``page_size.<name>`` and ``list_shape.<name>`` say."""
    variants = ctx.state.variants
    shape = f"list_shape.{name}"
    if shape in variants.as_dict() and variants.pick(shape) == "plain":
        return ok(list(rows))
    number, size = page_number(query), page_size(query)
    if variants.pick(f"page_size.{name}") == "ignored":
        size = IGNORED_PAGE_SIZE
    return ok(envelope(rows, number, size))


def created(ctx: Ctx, record: Any, key: str, headers: Mapping[str, str]) -> Response:
    """The 201 answer of a create, as topic ``create_answer`` says: the record, only its
    ``key`` field, or no body."""
    answer = ctx.state.variants.pick("create_answer")
    if answer == "empty":
        return Response(status_code=201, headers=dict(headers))
    if answer == "id_only" and isinstance(record, Mapping):
        return ok({key: record.get(key)}, 201, headers)
    return ok(record, 201, headers)


def id_case(ctx: Ctx, record: Any) -> Any:
    """``record`` with ``...ID`` fields spelled ``...Id`` when topic ``field_case`` says so
    (nested records and lists included)."""
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
