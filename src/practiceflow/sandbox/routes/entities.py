"""The credential check, settings lists and users; entities (clients and leads as stored rows),
their integration ids, contacts and groups; leads (status Lead), their notes, and conversion to a
client."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import (
    ContactBody,
    EntityBody,
    LeadBody,
    LeadNoteBody,
    NewContactBody,
)
from practiceflow.sandbox.clock import format_time, parse_time
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.common import (
    LAST_UPDATED,
    PAGE_NUMBER,
    PAGE_SIZE,
    Ctx,
    Op,
    Param,
    created,
    entity_or_404,
    fixed_page,
    id_case,
    ok,
    page_number,
    paged,
    query_bool,
    read_body,
    settings_op,
    since,
    status_text,
)
from practiceflow.sandbox.store import ENTITY_EXTRA_FIELDS, Entity, Practice


async def validate(ctx: Ctx, request: Request) -> Response:
    """The credential check result (spec 2.8b)."""
    credential = ctx.credential
    answer = {
        "authenticated": True,
        "message": "Credentials are valid.",
        "clientID": credential.client_id,
        "clientName": credential.name,
        "canWrite": credential.can_write,
        "timestamp": ctx.state.now_text(),
    }
    return ok(id_case(ctx, answer))


async def users(ctx: Ctx, request: Request) -> Response:
    """Users of the practice, a fixed server page size."""
    return ok(fixed_page(ctx, ctx.practice.users, page_number(request.query_params)))


def group_view(practice: Practice, group: dict[str, Any], members: bool) -> dict[str, Any]:
    """The public shape of a group (spec 2.5), with its member rows when ``members``."""
    view = {key: value for key, value in group.items() if not key.startswith("_")}
    if members:
        found = [practice.entities[key] for key in group["_members"] if key in practice.entities]
        view["members"] = [
            {"entityKey": row.key, "entityName": row.name, "entityEmail": row.email}
            for row in found
        ]
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


async def list_entities(ctx: Ctx, request: Request) -> Response:
    """Entity summaries, a fixed server page size; ``lastUpdated`` orders by time."""
    query = request.query_params
    number = page_number(query)
    after = since(query, ctx.state.clock)
    variants = ctx.state.variants
    if variants.is_("entity_order", "ascending") and variants.is_("leads_in_entities", "listed"):
        rows = ctx.practice.entities_page(number, ctx.state.config.page_size, after)
    else:
        rows = fixed_page(ctx, _played_order(ctx, after), number)
    summaries = [entity.summary() for entity in rows]
    for row in summaries:
        row["status"] = status_text(ctx, row["status"])
    return ok(summaries)


def _played_order(ctx: Ctx, after: float | None) -> list[Entity]:
    """Matching entities in topic ``entity_order``'s order, as ``leads_in_entities`` says."""
    variants = ctx.state.variants
    practice = ctx.practice
    if after is None or variants.is_("entity_order", "creation"):
        rows = [row for row in practice.order if after is None or row.updated >= after]
    else:
        rows = [row[2] for row in practice.index if row[0] >= after]
        if variants.is_("entity_order", "descending"):
            rows.reverse()
    if variants.is_("leads_in_entities", "hidden"):
        rows = [row for row in rows if row.status != "Lead"]
    return rows


def resolve_type(practice: Practice, body: EntityBody | None, text: str | None) -> dict[str, Any]:
    """The entity type named by ``text``, else by ``body.entityTypeID``; 400 when unknown."""
    valid = ", ".join(f"{row['code']} ({row['name']})" for row in practice.entity_types)
    if text is not None:
        row = practice.entity_type(text)
        if row is None:
            detail = f"entityType: got {text!r}; valid values are {valid}"
            raise ApiProblem(400, detail)
        return row
    if body is not None and body.entityTypeID is not None:
        wanted = body.entityTypeID
        row = next((row for row in practice.entity_types if row["entityTypeID"] == wanted), None)
        if row is None:
            detail = f"entityTypeID: got {body.entityTypeID}; valid values are {valid}"
            raise ApiProblem(400, detail)
        return row
    raise ApiProblem(400, f"entityType or entityTypeID is required; valid values are {valid}")


def create_entity(practice: Practice, body: EntityBody) -> Entity:
    """Store a new entity from a create body (400 for an unknown type or status)."""
    row = resolve_type(practice, body, body.entityType)
    given = body.clientStatus if body.clientStatus is not None else "Active"
    status_text = given.strip().casefold()
    if status_text not in ("lead", "active"):
        detail = f"clientStatus: got {body.clientStatus!r}; valid values are Lead, Active"
        raise ApiProblem(400, detail)
    extra = body.model_dump(include=set(ENTITY_EXTRA_FIELDS))
    return practice.add_entity(
        body.entityCode or f"C{len(practice.order) + 1:06d}",
        row,
        name=body.entityName,
        surname=body.entitySurname,
        initials=body.entityInitials,
        status="Lead" if status_text == "lead" else "Active",
        email=body.email,
        lead_status="New" if status_text == "lead" else None,
        extra=extra,
    )


async def post_entity(ctx: Ctx, request: Request) -> Response:
    """Create a client or lead: 201, ``Location`` and the detail record."""
    body = await read_body(request, EntityBody)
    entity = create_entity(ctx.practice, body)
    event = "lead.created" if entity.status == "Lead" else "client.created"
    ctx.state.emit(ctx.practice, event, {"entityKey": entity.key, "entityName": entity.name})
    location = f"/{ctx.region}/api/v1/entities/{entity.key}"
    return created(ctx, _detail(ctx, entity), "entityKey", {"Location": location})


def _detail(ctx: Ctx, entity: Entity) -> dict[str, Any]:
    detail = ctx.practice.entity_detail(entity)
    detail["status"] = status_text(ctx, detail.get("status"))
    return dict(id_case(ctx, detail))


async def get_entity(ctx: Ctx, request: Request) -> Response:
    """The detail record of one entity."""
    return ok(_detail(ctx, entity_or_404(ctx.practice, request.path_params["key"])))


async def get_integrations(ctx: Ctx, request: Request) -> Response:
    """The external-system ids of one entity (spec 2.2)."""
    entity = entity_or_404(ctx.practice, request.path_params["key"])
    return ok(ctx.practice.integrations(entity))


async def list_all_contacts(ctx: Ctx, request: Request) -> Response:
    """Contacts across clients, ``pageSize`` envelope, optional ``lastUpdated``."""
    query = request.query_params
    after = since(query, ctx.state.clock)
    rows = list(ctx.practice.contacts.values())
    if after is not None:
        rows = [row for row in rows if parse_time(row["lastUpdated"]) >= after]
    return paged(ctx, "contacts", rows, query)


async def list_contacts(ctx: Ctx, request: Request) -> Response:
    """Contacts of one client (a bare array)."""
    entity = entity_or_404(ctx.practice, request.path_params["entityKey"])
    return ok([row for row in ctx.practice.contacts.values() if row["entityKey"] == entity.key])


async def create_contact(ctx: Ctx, request: Request) -> Response:
    """Add a contact to a client; bumps the client's ``lastUpdated``."""
    entity = entity_or_404(ctx.practice, request.path_params["entityKey"])
    body = await read_body(request, NewContactBody)
    if not (body.firstName or body.lastName or body.email):
        raise ApiProblem(400, "firstName, lastName or email is required")
    key = ctx.practice.new_uuid()
    ctx.practice.touch(entity)
    contact = {
        "contactKey": key,
        "entityKey": entity.key,
        **body.model_dump(),
        "lastUpdated": format_time(entity.updated),
    }
    contact["isPrimary"] = bool(contact["isPrimary"])
    ctx.practice.contacts[key] = contact
    location = f"/{ctx.region}/api/v1/entities/{entity.key}/contacts"
    return created(ctx, contact, "contactKey", {"Location": location})


async def update_contact(ctx: Ctx, request: Request) -> Response:
    """Change the given fields of a contact of a client."""
    entity = entity_or_404(ctx.practice, request.path_params["entityKey"])
    contact = ctx.practice.contacts.get(str(request.path_params["contactKey"]))
    if contact is None or contact["entityKey"] != entity.key:
        raise ApiProblem(404, "The contact was not found for this client.")
    body = await read_body(request, ContactBody)
    contact.update(body.model_dump(exclude_none=True))
    ctx.practice.touch(entity)
    contact["lastUpdated"] = format_time(entity.updated)
    return ok(contact)


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
    source = None
    if body.leadSource is not None:
        source = _name_of(practice.lead_sources, body.leadSource, "leadSource")
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
    data = {"entityKey": entity.key, "entityName": entity.name}
    ctx.state.emit(ctx.practice, "client.created", data)
    return ok(ctx.practice.entity_detail(entity))


_SETTINGS = "/api/v1/settings/"
_ENTITY = "/api/v1/entities/{key:uuid}"
_CONTACTS = "/api/v1/entities/{entityKey:uuid}/contacts"
_LEAD = "/api/v1/leads/{entityKey:uuid}"
_QUERY = (PAGE_NUMBER, PAGE_SIZE, LAST_UPDATED)

# fmt: off
OPS = [
    Op("GET", "/api/v1/auth/validate", validate, "Check the credentials", "auth"),
    settings_op(_SETTINGS + "entity-types", "entity_types", "Entity types", "settings"),
    settings_op(_SETTINGS + "lead-sources", "lead_sources", "Lead sources", "settings"),
    settings_op(_SETTINGS + "lead-statuses", "lead_statuses", "Lead statuses", "settings"),
    Op("GET", "/api/v1/users/list", users, "Users (fixed page size)", "users",
       query=(PAGE_NUMBER,), guess=True),
    Op("GET", "/api/v1/entities", list_entities, "List entities (fixed page size)", "entities",
       query=(PAGE_NUMBER, LAST_UPDATED)),
    Op("GET", "/api/v1/entities/list", list_entities, "List entities (alias)", "entities",
       query=(PAGE_NUMBER, LAST_UPDATED)),
    Op("POST", "/api/v1/entities", post_entity, "Create an entity", "entities", body=EntityBody),
    Op("GET", _ENTITY, get_entity, "Load an entity", "entities"),
    Op("GET", _ENTITY + "/integrations", get_integrations, "Integration ids of an entity",
       "entities"),
    Op("GET", "/api/v1/contacts/list", list_all_contacts, "Contacts across clients", "contacts",
       query=_QUERY, guess=True),
    Op("GET", _CONTACTS, list_contacts, "Contacts of a client", "contacts", guess=True),
    Op("POST", _CONTACTS, create_contact, "Add a contact to a client", "contacts",
       body=NewContactBody, guess=True),
    Op("PUT", _CONTACTS + "/{contactKey:uuid}", update_contact, "Update a contact of a client",
       "contacts", body=ContactBody, guess=True),
    Op("GET", "/api/v1/leads", list_leads, "List leads", "leads", query=_QUERY, guess=True),
    Op("POST", "/api/v1/leads", create_lead, "Create a lead", "leads", body=LeadBody, guess=True),
    Op("GET", _LEAD, get_lead, "Load a lead", "leads", guess=True),
    Op("GET", _LEAD + "/notes", list_notes, "Notes of a lead", "leads", guess=True),
    Op("POST", _LEAD + "/notes", add_note, "Add a note to a lead", "leads", body=LeadNoteBody,
       guess=True),
    Op("POST", _LEAD + "/convert-to-client", convert, "Convert a lead to a client", "leads",
       statuses=(200, 400, 403, 404)),
    Op("GET", "/api/v1/groups/list", list_groups, "List groups", "groups",
       query=(LAST_UPDATED, PAGE_NUMBER, Param("name", description="substring of the name"),
              Param("groupCode", description="exact code"), Param("isActive", "boolean"),
              Param("includeMembers", "boolean"))),
]
# fmt: on
