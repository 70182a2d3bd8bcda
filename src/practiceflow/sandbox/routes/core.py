"""The credential check, settings lists and users."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.paging import page_number
from practiceflow.sandbox.routes.common import PAGE_NUMBER, Ctx, Op, ok, settings_op
from practiceflow.sandbox.routes.played import id_case


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
    number = page_number(request.query_params)
    size = ctx.state.config.page_size
    start = (number - 1) * size
    return ok(ctx.practice.users[start : start + size])


_SETTINGS = "/api/v1/settings/"

# fmt: off
OPS = [
    Op("GET", "/api/v1/auth/validate", validate, "Check the credentials", "auth"),
    settings_op(_SETTINGS + "entity-types", "entity_types", "Entity types", "settings",
                lambda practice: practice.entity_types),
    settings_op(_SETTINGS + "lead-sources", "lead_sources", "Lead sources", "settings",
                lambda practice: practice.lead_sources),
    settings_op(_SETTINGS + "lead-statuses", "lead_statuses", "Lead statuses", "settings",
                lambda practice: practice.lead_statuses),
    Op("GET", "/api/v1/users/list", users, "Users (fixed page size)", "users",
       query=(PAGE_NUMBER,), statuses=(200, 400), guess=True),
]
# fmt: on
