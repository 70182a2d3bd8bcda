"""Proposals (all shapes guessed except the renew/duplicate transitions) and catalogs."""

from __future__ import annotations

import copy
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import (
    ProposalBody,
    ProposalFromTemplateBody,
    ProposalServiceBody,
    RenewBody,
)
from practiceflow.sandbox.clock import format_time
from practiceflow.sandbox.paging import query_uuid
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.common import (
    PAGE_NUMBER,
    PAGE_SIZE,
    Ctx,
    Op,
    Param,
    entity_or_404,
    found,
    ok,
    paged,
    read_body,
    settings_op,
    status_text,
)
from practiceflow.sandbox.store import Entity, Practice

#: Proposal templates of ``POST /proposals/from-template``: id -> (title, service ids).
PROPOSAL_TEMPLATES: dict[int, tuple[str, tuple[int, ...]]] = {
    901: ("Annual compliance", (400, 401)),
    902: ("Monthly bookkeeping", (402, 403)),
}


def proposal_or_404(practice: Practice, key: object) -> dict[str, Any]:
    """The proposal with this key, or a 404 problem."""
    return found(practice.proposals, str(key), "Proposal")


def _new_proposal(
    practice: Practice, entity: Entity, title: str, services: list[dict[str, Any]]
) -> dict[str, Any]:
    key = practice.new_uuid()
    now = format_time(practice.now())
    proposal = {
        "proposalKey": key,
        "proposalNumber": f"P{practice.new_id()}",
        "entityKey": entity.key,
        "entityName": entity.name,
        "title": title,
        "status": "Draft",
        "createdOn": now,
        "updatedOn": now,
        "acceptedOn": None,
        "totalAmount": round(sum(float(s["price"]) * int(s["quantity"]) for s in services), 2),
        "services": services,
        "billings": [
            {"billingType": "Once", "amount": float(s["price"]) * int(s["quantity"])}
            for s in services
        ],
        "jobs": [],
        "renewedFrom": None,
    }
    practice.proposals[key] = proposal
    return proposal


def _services(practice: Practice, rows: list[ProposalServiceBody]) -> list[dict[str, Any]]:
    catalog = {int(row["serviceID"]): row for row in practice.catalogs["services"]}
    chosen = []
    for n, row in enumerate(rows):
        service = catalog.get(row.serviceID)
        if service is None:
            valid = ", ".join(str(key) for key in catalog)
            detail = f"services[{n}].serviceID: got {row.serviceID}; valid values are {valid}"
            raise ApiProblem(400, detail)
        price = service["price"] if row.price is None else row.price
        chosen.append(dict(service, price=price, quantity=row.quantity))
    return chosen


async def list_proposals(ctx: Ctx, request: Request) -> Response:
    """Proposals, optionally of one client (``entityKey``), ``pageSize`` envelope."""
    query = request.query_params
    required = ctx.state.variants.is_("proposals_filter", "required")
    wanted = query_uuid(query, "entityKey", required=required)
    rows = [
        _played(ctx, row)
        for row in ctx.practice.proposals.values()
        if not wanted or row["entityKey"] == wanted
    ]
    return paged(ctx, "proposals", rows, query)


def _played(ctx: Ctx, row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "status": status_text(ctx, row.get("status"))}


async def get_proposal(ctx: Ctx, request: Request) -> Response:
    """One proposal."""
    return ok(_played(ctx, proposal_or_404(ctx.practice, request.path_params["key"])))


async def get_pricing(ctx: Ctx, request: Request) -> Response:
    """Services, invoices, recurring billings and jobs of a proposal."""
    proposal = proposal_or_404(ctx.practice, request.path_params["key"])
    return ok(
        {
            "proposalKey": proposal["proposalKey"],
            "services": proposal["services"],
            "invoices": [row for row in proposal["billings"] if row["billingType"] == "Once"],
            "recurringBillings": [
                row for row in proposal["billings"] if row["billingType"] != "Once"
            ],
            "jobs": proposal["jobs"],
        }
    )


def _copy(practice: Practice, original: dict[str, Any]) -> dict[str, Any]:
    entity = practice.entities.get(original["entityKey"])
    if entity is None:  # the client was removed; the copy still names it
        raise ApiProblem(400, "The proposal's client no longer exists.")
    proposal = _new_proposal(
        practice, entity, original["title"], copy.deepcopy(original["services"])
    )
    proposal["billings"] = copy.deepcopy(original["billings"])
    proposal["jobs"] = copy.deepcopy(original["jobs"])
    return proposal


async def duplicate(ctx: Ctx, request: Request) -> Response:
    """A new Draft copy; the original is unchanged."""
    original = proposal_or_404(ctx.practice, request.path_params["key"])
    return ok(_copy(ctx.practice, original), 201)


async def renew_preview(ctx: Ctx, request: Request) -> Response:
    """What a renew would create, and the signatories to choose from."""
    original = proposal_or_404(ctx.practice, request.path_params["key"])
    entity = ctx.practice.entities.get(original["entityKey"])
    signatories = [{"signatoryKey": entity.key, "name": entity.name}] if entity else []
    return ok(
        {
            "proposalKey": original["proposalKey"],
            "title": original["title"],
            "totalAmount": original["totalAmount"],
            "services": original["services"],
            "signatories": signatories,
        }
    )


async def renew(ctx: Ctx, request: Request) -> Response:
    """The original becomes Renewed; a new Draft with copied pricing is returned."""
    original = proposal_or_404(ctx.practice, request.path_params["key"])
    await read_body(request, RenewBody, optional=True)
    proposal = _copy(ctx.practice, original)
    proposal["renewedFrom"] = original["proposalKey"]
    original["status"] = "Renewed"
    original["updatedOn"] = format_time(ctx.practice.now())
    return ok(proposal, 201)


async def create_proposal(ctx: Ctx, request: Request) -> Response:
    """An adhoc Draft proposal from catalog services."""
    body = await read_body(request, ProposalBody)
    entity = entity_or_404(ctx.practice, body.entityKey)
    services = _services(ctx.practice, body.services)
    title = body.title or f"Proposal for {entity.name}"
    return ok(_new_proposal(ctx.practice, entity, title, services), 201)


async def from_template(ctx: Ctx, request: Request) -> Response:
    """A Draft proposal from one of :data:`PROPOSAL_TEMPLATES`."""
    body = await read_body(request, ProposalFromTemplateBody)
    entity = entity_or_404(ctx.practice, body.entityKey)
    template = PROPOSAL_TEMPLATES.get(body.templateId)
    if template is None:
        valid = ", ".join(str(key) for key in PROPOSAL_TEMPLATES)
        raise ApiProblem(400, f"templateId: got {body.templateId}; valid values are {valid}")
    title, service_ids = template
    services = _services(
        ctx.practice,
        [ProposalServiceBody.model_validate({"serviceID": sid}) for sid in service_ids],
    )
    return ok(_new_proposal(ctx.practice, entity, body.title or title, services), 201)


def _catalog(name: str) -> Op:
    handler = f"catalog_{name.replace('-', '_')}"
    path = f"/api/v1/proposals/{name}"
    return settings_op(path, handler, f"Catalog: {name}", "proposals", lambda p: p.catalogs[name])


_KEY = "/api/v1/proposals/{key:uuid}"

# fmt: off
OPS = [
    Op("GET", "/api/v1/proposals/list", list_proposals, "Proposals of a client", "proposals",
       query=(Param("entityKey", format="uuid", required=True), PAGE_NUMBER, PAGE_SIZE),
       statuses=(200, 400),
       guess=True),
    *(_catalog(name) for name in ("services", "xpm-job-templates", "xpm-job-categories",
                                  "xpm-staff", "fyi-job-templates", "fyi-job-states")),
    Op("POST", "/api/v1/proposals", create_proposal, "Create an adhoc proposal", "proposals",
       body=ProposalBody, statuses=(201, 400, 403, 404), guess=True),
    Op("POST", "/api/v1/proposals/from-template", from_template, "Proposal from a template",
       "proposals", body=ProposalFromTemplateBody, statuses=(201, 400, 403, 404), guess=True),
    Op("GET", _KEY, get_proposal, "Load a proposal", "proposals", statuses=(200, 404),
       guess=True),
    Op("GET", _KEY + "/pricing", get_pricing, "Pricing of a proposal", "proposals",
       statuses=(200, 404), guess=True),
    Op("GET", _KEY + "/renew-preview", renew_preview, "Preview a renew", "proposals",
       statuses=(200, 404), guess=True),
    Op("POST", _KEY + "/renew", renew, "Renew a proposal", "proposals", body=RenewBody,
       statuses=(201, 400, 403, 404), body_optional=True),
    Op("POST", _KEY + "/duplicate", duplicate, "Duplicate a proposal", "proposals",
       statuses=(201, 403, 404)),
]
# fmt: on
