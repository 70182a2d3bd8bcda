"""List operations as the platforms that read an OpenAPI document page them (spec section 8).

A list module of the runner pages by itself; an exported operation is one request, so a
platform user pages it with ``pageNumber``, and ``pageSize`` where the server does not fix
the page size (``paging.fixed_size`` of the connector manifest). The spec does not show the
envelope: lists that take ``pageSize`` most likely answer ``{items, hasMore, ...}`` (spec 8:
"``hasMore`` where present"), the others a bare array; that likely shape is what a one-shape
platform (Power Automate's OpenAPI 2.0) is given, and the first alternative in OpenAPI 3.1.
Rows are the module's row schema, plus the row fields other modules' choices name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from practiceflow.api.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_NUMBER, MAX_PAGE_SIZE
from practiceflow.manifest.models import ActionModule, TriggerModule
from practiceflow.manifest.module_registry import ModuleRegistry

#: Where the rows sit in an enveloped list answer.
ENVELOPE_ITEMS = "items"


@dataclass(frozen=True)
class ListShape:
    """How one list operation pages: whether it takes ``pageNumber`` and ``pageSize`` (its
    page size not fixed by the server), and the answer most likely given (``array`` or
    ``envelope``)."""

    paged: bool
    page_size: bool
    shape: Literal["array", "envelope"]


def list_shape(action: ActionModule, connector: Mapping[str, Any]) -> ListShape | None:
    """The paging and answer shape of a list action (None for any other action)."""
    spec = action.extensions.list
    if spec is None:
        return None
    fixed = set(connector.get("paging", {}).get("fixed_size", ()))
    page_size = spec.paged and action.request.path not in fixed
    return ListShape(spec.paged, page_size, "envelope" if page_size else "array")


def page_parameters(shape: ListShape, connector: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The OpenAPI 3.1 query parameters that choose a page: ``pageNumber`` (and
    ``pageSize`` where the list takes it); none when not paged."""
    if not shape.paged:
        return []
    paging = connector.get("paging", {})
    number = {
        "name": paging.get("page_param", "pageNumber"),
        "in": "query",
        "required": False,
        "description": "The page to read, 1-based; ask for the next page while the answer "
        "says hasMore, or while a page is full.",
        "schema": {
            "type": "integer",
            "minimum": int(paging.get("page_min", 1)),
            "maximum": int(paging.get("page_max", MAX_PAGE_NUMBER)),
            "default": 1,
        },
    }
    if not shape.page_size:
        return [number]
    size = {
        "name": paging.get("size_param", "pageSize"),
        "in": "query",
        "required": False,
        "description": "Rows per page, where the list supports it (a list that does not "
        "answers its own page size).",
        "schema": {
            "type": "integer",
            "minimum": 1,
            "maximum": int(paging.get("size_max", MAX_PAGE_SIZE)),
            "default": int(paging.get("size_default", DEFAULT_PAGE_SIZE)),
        },
    }
    return [number, size]


def row_schema(output: Mapping[str, Any]) -> Any:
    """The schema of one row of a list action's answer (its ``output.items.items``; an open
    object when the module says nothing about its rows)."""
    items = output.get("properties", {}).get("items", {})
    rows = items.get("items") if isinstance(items, Mapping) else None
    if isinstance(rows, Mapping) and rows:
        return dict(rows)
    return {"type": "object", "additionalProperties": True}


def choice_fields(registry: ModuleRegistry) -> dict[str, dict[str, Any]]:
    """List action key -> the row fields the modules' choices name -> a schema saying so."""
    found: dict[str, dict[str, Any]] = {}
    modules: list[ActionModule | TriggerModule] = [
        *registry.actions.values(),
        *registry.triggers.values(),
    ]
    for module in sorted(modules, key=lambda item: item.key):
        for source in module.choices.values():
            for name in (source.value, source.label, *source.also):
                if name:
                    text = f"The row field {module.key}'s choices read."
                    found.setdefault(source.action, {}).setdefault(name, {"description": text})
    return found


def with_fields(row: Any, fields: Mapping[str, Any]) -> Any:
    """A row schema with ``fields`` added to its properties (those it already has win)."""
    if not fields or not isinstance(row, Mapping):
        return row
    properties = {**fields, **dict(row.get("properties") or {})}
    return {**row, "properties": dict(sorted(properties.items()))}


def response_alternatives(shape: ListShape, row_ref: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer of one page: a bare array of rows and the envelope, the likely first."""
    array = {"type": "array", "items": dict(row_ref)}
    envelope = {
        "type": "object",
        "additionalProperties": True,
        "properties": {
            ENVELOPE_ITEMS: {
                "type": "array",
                "items": dict(row_ref),
                "description": "The rows of this page.",
            },
            "hasMore": {
                "type": "boolean",
                "description": "True when another page follows; read pageNumber + 1.",
            },
            "pageNumber": {"type": "integer", "description": "This page's number."},
            "pageSize": {"type": "integer", "description": "Rows per page."},
            "totalCount": {"type": "integer", "description": "Rows in the whole list."},
        },
    }
    return [envelope, array] if shape.shape == "envelope" else [array, envelope]


def paging_note(shape: ListShape) -> str:
    """A sentence for the operation's description saying how to read every page."""
    if not shape.paged:
        return "The whole list comes in one answer."
    size = "; pageSize sets the rows per page (1 to 100)" if shape.page_size else ""
    return (
        f"One page per call: pageNumber picks the page (1-based){size}. To read the whole "
        "list, ask for the next page while the answer's hasMore is true, or, where the answer "
        "has no hasMore, until a page holds fewer rows than the first or repeats the page "
        "before (a service that ignores pageNumber answers every page alike)."
    )
