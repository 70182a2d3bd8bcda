"""Groups of clients with their filters (spec 4.1) and optional members."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.paging import page_number, query_bool, since
from practiceflow.sandbox.routes.common import LAST_UPDATED, PAGE_NUMBER, Ctx, Op, Param, ok
from practiceflow.sandbox.store import Practice


def group_view(practice: Practice, group: dict[str, Any], members: bool) -> dict[str, Any]:
    """The public shape of a group (spec 2.5); ``members`` only when asked for.

    Args:
        practice: the practice (to name the members).
        group: the stored row.
        members: include the member rows.

    Returns:
        The JSON-ready group.
    """
    view = {key: value for key, value in group.items() if not key.startswith("_")}
    if members:
        rows = []
        for key in group["_members"]:
            entity = practice.entities.get(key)
            if entity is not None:
                rows.append(
                    {"entityKey": key, "entityName": entity.name, "entityEmail": entity.email}
                )
        view["members"] = rows
    return view


async def list_groups(ctx: Ctx, request: Request) -> Response:
    """Groups filtered by name, groupCode, isActive, lastUpdated; fixed page size."""
    query = request.query_params
    number = page_number(query)
    after = since(query, ctx.state.clock)
    active = query_bool(query, "isActive")
    members = bool(query_bool(query, "includeMembers"))
    name = (query.get("name") or "").casefold()
    code = query.get("groupCode")
    rows = [
        group
        for group in ctx.practice.groups
        if (not name or name in str(group["groupName"]).casefold())
        and (not code or group["groupCode"] == code)
        and (active is None or group["isActive"] is active)
        and (after is None or group["_updated"] >= after)
    ]
    size = ctx.state.config.page_size
    start = (number - 1) * size
    return ok([group_view(ctx.practice, row, members) for row in rows[start : start + size]])


# fmt: off
OPS = [
    Op("GET", "/api/v1/groups/list", list_groups, "List groups", "groups",
       query=(LAST_UPDATED, PAGE_NUMBER, Param("name", description="substring of the name"),
              Param("groupCode", description="exact code"), Param("isActive", "boolean"),
              Param("includeMembers", "boolean")),
       statuses=(200, 400)),
]
# fmt: on
