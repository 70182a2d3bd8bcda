"""The credential check, settings lists, users, and groups of clients (spec 4.1 filters)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.routes.common import (
    LAST_UPDATED,
    PAGE_NUMBER,
    Ctx,
    Op,
    Param,
    fixed_page,
    id_case,
    ok,
    page_number,
    query_bool,
    settings_op,
    since,
)
from practiceflow.sandbox.store import Practice


async def validate(ctx: Ctx, request: Request) -> Response:
    """The credential check result (spec 2.8b)."""
    credential = ctx.credential
    return ok(
        id_case(
            ctx,
            {
                "authenticated": True,
                "message": "Credentials are valid.",
                "clientID": credential.client_id,
                "clientName": credential.name,
                "canWrite": credential.can_write,
                "timestamp": ctx.state.now_text(),
            },
        )
    )


async def users(ctx: Ctx, request: Request) -> Response:
    """Users of the practice, a fixed server page size."""
    return ok(fixed_page(ctx, ctx.practice.users, page_number(request.query_params)))


def group_view(practice: Practice, group: dict[str, Any], members: bool) -> dict[str, Any]:
    """The public shape of a group (spec 2.5), with its member rows when ``members``."""
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
    return ok([group_view(ctx.practice, row, members) for row in fixed_page(ctx, rows, number)])


_SETTINGS = "/api/v1/settings/"

# fmt: off
OPS = [
    Op("GET", "/api/v1/auth/validate", validate, "Check the credentials", "auth"),
    settings_op(_SETTINGS + "entity-types", "entity_types", "Entity types", "settings"),
    settings_op(_SETTINGS + "lead-sources", "lead_sources", "Lead sources", "settings"),
    settings_op(_SETTINGS + "lead-statuses", "lead_statuses", "Lead statuses", "settings"),
    Op("GET", "/api/v1/users/list", users, "Users (fixed page size)", "users",
       query=(PAGE_NUMBER,), guess=True),
]
#: Listed after the leads in the route table (the OpenAPI operation ids number them).
GROUP_OPS = [
    Op("GET", "/api/v1/groups/list", list_groups, "List groups", "groups",
       query=(LAST_UPDATED, PAGE_NUMBER, Param("name", description="substring of the name"),
              Param("groupCode", description="exact code"), Param("isActive", "boolean"),
              Param("includeMembers", "boolean"))),
]
# fmt: on
