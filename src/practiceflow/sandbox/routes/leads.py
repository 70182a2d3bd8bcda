"""Leads: entities whose status is Lead, their notes, and conversion to a client."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import LeadBody, LeadNoteBody
from practiceflow.sandbox.clock import format_time
from practiceflow.sandbox.paging import since
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.common import (
    LAST_UPDATED,
    PAGE_NUMBER,
    PAGE_SIZE,
    Ctx,
    Op,
    created,
    entity_or_404,
    ok,
    paged,
    read_body,
    status_text,
)
from practiceflow.sandbox.routes.entities import resolve_type
from practiceflow.sandbox.store import Entity, Practice


def _lead_or_404(practice: Practice, key: object) -> Entity:
    entity = entity_or_404(practice, key)
    if entity.status != "Lead" and entity.lead_status is None:
        raise ApiProblem(404, f"Lead {key} was not found in this practice.")
    return entity


def _name_of(rows: list[dict[str, Any]], given: str, field: str) -> str:
    for row in rows:
        if str(row["name"]).casefold() == given.strip().casefold():
            return str(row["name"])
    valid = ", ".join(str(row["name"]) for row in rows)
    raise ApiProblem(400, f"{field}: got {given!r}; valid values are {valid}")


async def list_leads(ctx: Ctx, request: Request) -> Response:
    """Leads (status Lead), ``pageSize`` envelope, optional ``lastUpdated``."""
    query = request.query_params
    after = since(query, ctx.state.clock)
    rows = ctx.practice.order if after is None else [row[2] for row in ctx.practice.index]
    leads = [
        _view(ctx, entity)
        for entity in rows
        if entity.status == "Lead" and (after is None or entity.updated >= after)
    ]
    return paged(ctx, "leads", leads, query)


def _view(ctx: Ctx, entity: Entity) -> dict[str, Any]:
    view = entity.lead_view()
    view["status"] = status_text(ctx, view["status"])
    view["leadStatus"] = status_text(ctx, view["leadStatus"])
    return view


async def get_lead(ctx: Ctx, request: Request) -> Response:
    """One lead."""
    return ok(_view(ctx, _lead_or_404(ctx.practice, request.path_params["entityKey"])))


async def create_lead(ctx: Ctx, request: Request) -> Response:
    """Create a lead; source and status are NAMES from the settings lists."""
    body = await read_body(request, LeadBody)
    practice = ctx.practice
    row = resolve_type(practice, None, body.entityType)
    source = (
        _name_of(practice.lead_sources, body.leadSource, "leadSource")
        if body.leadSource is not None
        else None
    )
    given = body.leadStatus if body.leadStatus is not None else "New"
    status = _name_of(practice.lead_statuses, given, "leadStatus")
    entity = practice.add_entity(
        f"L{len(practice.order) + 1:06d}",
        row,
        name=body.entityName,
        surname=body.entitySurname,
        initials=None,
        status="Lead",
        email=body.email,
        lead_source=source,
        lead_status=status,
    )
    ctx.state.emit(practice, "lead.created", {"entityKey": entity.key, "entityName": entity.name})
    location = f"/{ctx.region}/api/v1/leads/{entity.key}"
    return created(ctx, _view(ctx, entity), "entityKey", {"Location": location})


async def list_notes(ctx: Ctx, request: Request) -> Response:
    """Notes of a lead."""
    entity = _lead_or_404(ctx.practice, request.path_params["entityKey"])
    return ok(ctx.practice.lead_notes.get(entity.key, []))


async def add_note(ctx: Ctx, request: Request) -> Response:
    """Add a note to a lead; bumps its ``lastUpdated``."""
    entity = _lead_or_404(ctx.practice, request.path_params["entityKey"])
    body = await read_body(request, LeadNoteBody)
    ctx.practice.touch(entity)
    note = {
        "noteID": ctx.practice.new_id(),
        "note": body.note,
        "createdOn": format_time(entity.updated),
    }
    ctx.practice.lead_notes.setdefault(entity.key, []).append(note)
    return ok(note, 201)


async def convert(ctx: Ctx, request: Request) -> Response:
    """Convert a lead to an Active client; the ``entityKey`` is kept (spec section 3)."""
    entity = entity_or_404(ctx.practice, request.path_params["entityKey"])
    if entity.status != "Lead":
        detail = f"Entity {entity.key} is already a client (status {entity.status})."
        raise ApiProblem(400, detail)
    entity.status = "Active"
    entity.lead_status = "Won"
    ctx.practice.touch(entity)
    ctx.state.emit(
        ctx.practice, "client.created", {"entityKey": entity.key, "entityName": entity.name}
    )
    return ok(ctx.practice.entity_detail(entity))


# fmt: off
OPS = [
    Op("GET", "/api/v1/leads", list_leads, "List leads", "leads",
       query=(PAGE_NUMBER, PAGE_SIZE, LAST_UPDATED), statuses=(200, 400), guess=True),
    Op("POST", "/api/v1/leads", create_lead, "Create a lead", "leads", body=LeadBody,
       statuses=(201, 400, 403), guess=True),
    Op("GET", "/api/v1/leads/{entityKey:uuid}", get_lead, "Load a lead", "leads",
       statuses=(200, 404), guess=True),
    Op("GET", "/api/v1/leads/{entityKey:uuid}/notes", list_notes, "Notes of a lead", "leads",
       statuses=(200, 404), guess=True),
    Op("POST", "/api/v1/leads/{entityKey:uuid}/notes", add_note, "Add a note to a lead",
       "leads", body=LeadNoteBody, statuses=(201, 400, 403, 404), guess=True),
    Op("POST", "/api/v1/leads/{entityKey:uuid}/convert-to-client", convert,
       "Convert a lead to a client", "leads", statuses=(200, 400, 403, 404)),
]
# fmt: on
