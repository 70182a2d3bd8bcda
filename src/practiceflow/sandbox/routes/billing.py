"""Bills (adhoc create, list by bill date, load, PDF), ledger catalogs, recurring billing;
proposals (all shapes guessed except the renew/duplicate transitions) and their catalogs."""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import (
    BillBody,
    BillLineBody,
    ProposalBody,
    ProposalFromTemplateBody,
    ProposalServiceBody,
    RenewBody,
)
from practiceflow.sandbox.clock import format_time
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.common import (
    PAGE_NUMBER,
    PAGE_SIZE,
    Ctx,
    Op,
    Param,
    created,
    entity_or_404,
    found,
    id_case,
    ok,
    paged,
    query_date,
    query_uuid,
    read_body,
    settings_op,
    status_text,
)
from practiceflow.sandbox.store import BillLine, Entity, Practice
from practiceflow.sandbox.variants import Variants

#: Plus or minus this many percent, a taxPercent matches a ledger tax rate (spec 4.1 rule 2).
TAX_TOLERANCE = 0.02


def pdf_bytes(title: str) -> bytes:
    """A tiny, valid one-page PDF showing ``title`` (ASCII) for the PDF endpoints."""
    text = "".join(ch for ch in title if ch.isascii() and ch not in "()\\")[:80]
    stream = f"BT /F1 14 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref, size = len(out), len(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def _check_line(practice: Practice, index: int, line: BillLineBody, variants: Variants) -> BillLine:
    where = f"lineItems[{index}]"
    if line.amount is None:
        raise ApiProblem(400, f"{where}.amount is required")
    if line.taxAmount is None and line.taxPercent is None:
        # spec 2.4: every line needs one of them, an extTaxID included (rule 2 of 4.1
        # adds a ledger reference on top; it does not stand in for the tax)
        raise ApiProblem(400, f"{where}: taxAmount or taxPercent is required")
    if practice.ledger_connected:
        if line.extAccountID is None and line.extItemID is None:
            detail = f"{where}: the ledger is connected, so extAccountID or extItemID is required"
            raise ApiProblem(400, detail)
        rates = {int(row["taxID"]): float(row["rate"]) for row in practice.ledger_tax_rates}
        if line.extTaxID is not None:
            if line.extTaxID not in rates:
                valid = ", ".join(str(key) for key in rates)
                detail = f"{where}.extTaxID: got {line.extTaxID}; valid values are {valid}"
                raise ApiProblem(400, detail)
        elif line.taxPercent is None or not any(
            abs(line.taxPercent - rate) <= TAX_TOLERANCE + 1e-9 for rate in rates.values()
        ):
            valid = ", ".join(f"{rate:g}" for rate in sorted(set(rates.values())))
            detail = (
                f"{where}: the ledger is connected, so extTaxID or a taxPercent within "
                f"±{TAX_TOLERANCE} of a ledger tax rate is required (got "
                f"{line.taxPercent}); ledger rates are {valid}"
            )
            raise ApiProblem(400, detail)
    # Topic rounding: per_line rounds each line to cents; per_total keeps the line
    # unrounded here and rounds only the bill's totals.
    cents = 2 if variants.is_("rounding", "per_line") else 9
    amount = round(line.amount, cents)
    percent_wins = variants.is_("tax_precedence", "percent") or line.taxAmount is None
    if line.taxPercent is not None and percent_wins:
        tax = round(amount * line.taxPercent / 100, cents)
    else:
        tax = round(line.taxAmount or 0.0, cents)
    total = round(amount + tax, cents)
    return amount, tax, total, line.narration, line.extItemID, line.extAccountID, line.extTaxID


async def create_bill(ctx: Ctx, request: Request) -> Response:
    """Create an adhoc bill for an Active client; the server computes tax and totals."""
    practice = ctx.practice
    body = await read_body(request, BillBody)
    entity = entity_or_404(practice, body.entityKey)
    if entity.status != "Active":
        detail = f"entityKey: {entity.key} is a {entity.status}, not an Active client"
        raise ApiProblem(400, detail)
    variants = ctx.state.variants
    lines = [_check_line(practice, n, line, variants) for n, line in enumerate(body.lineItems)]
    today = date.fromisoformat(format_time(practice.now())[:10])
    bill_date = body.billDate or today
    due_date = body.dueDate or bill_date
    if due_date < bill_date:
        detail = f"dueDate: got {due_date}; it must not be before billDate {bill_date}"
        raise ApiProblem(400, detail)
    fields = body.model_dump(include={"billDetails", "syncNow", "sendBill"})
    days = bill_date.isoformat(), due_date.isoformat()
    bill = practice.add_bill(entity, *days, practice.now(), lines, **fields)
    location = {"Location": f"/{ctx.region}/api/v1/bills/{bill['billingID']}"}
    key = next(iter(id_case(ctx, {"billingID": None})))  # spelled as topic field_case says
    return created(ctx, id_case(ctx, bill), key, location)


#: Fields a ``slim`` bill list row leaves out (topic ``bill_rows``).
SLIM_LEFT_OUT = ("entityKey", "createdOn", "billDetails", "lineItems")


async def list_bills(ctx: Ctx, request: Request) -> Response:
    """Bills whose bill date lies in [startDate, endDate], ``pageSize`` envelope."""
    query = request.query_params
    required = ctx.state.variants.is_("bill_range", "required")
    start = query_date(query, "startDate", required=required)
    end = query_date(query, "endDate", required=required)
    inclusive = ctx.state.variants.is_("end_date", "inclusive")
    bills = sorted(ctx.practice.bills.values(), key=lambda row: (row["billDate"], row["billingID"]))
    low = start.isoformat() if start else ""
    high = end.isoformat() if end else "9999-99-99"  # no endDate: after every bill date
    left_out = SLIM_LEFT_OUT if ctx.state.variants.is_("bill_rows", "slim") else ()
    rows = [
        dict(id_case(ctx, {key: value for key, value in row.items() if key not in left_out}))
        for row in bills
        if low <= row["billDate"] < high or (inclusive and row["billDate"] == high)
    ]
    return paged(ctx, "bills", rows, query)


async def get_bill(ctx: Ctx, request: Request) -> Response:
    """One bill with its ledger fields."""
    return ok(id_case(ctx, found(ctx.practice.bills, request.path_params["billingId"], "Bill")))


async def bill_pdf(ctx: Ctx, request: Request) -> Response:
    """The invoice as a PDF."""
    bill = found(ctx.practice.bills, request.path_params["billingId"], "Bill")
    return Response(pdf_bytes(f"Invoice {bill['billNumber']}"), media_type="application/pdf")


async def ledger_status(ctx: Ctx, request: Request) -> Response:
    """Whether a ledger is connected (the switch behind rule 2 of spec 4.1)."""
    connected = ctx.practice.ledger_connected
    return ok({"connected": connected, "ledgerName": "Sandbox Ledger" if connected else None})


def _schedule_view(row: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in row.items() if k != "runs"}, "runCount": len(row["runs"])}


async def list_recurring(ctx: Ctx, request: Request) -> Response:
    """Recurring billing schedules, ``pageSize`` envelope (no ledger numbers on rows)."""
    rows = [_schedule_view(row) for row in ctx.practice.recurring.values()]
    return paged(ctx, "recurring", rows, request.query_params)


def _schedule_or_404(ctx: Ctx, request: Request) -> dict[str, Any]:
    schedule_id = request.path_params["recurringBillingId"]
    return found(ctx.practice.recurring, schedule_id, "Recurring billing", "")


async def get_recurring(ctx: Ctx, request: Request) -> Response:
    """One recurring billing schedule."""
    return ok(_schedule_view(_schedule_or_404(ctx, request)))


async def recurring_runs(ctx: Ctx, request: Request) -> Response:
    """The runs of a schedule; each names the generated bill (which has ledger numbers)."""
    return ok(id_case(ctx, _schedule_or_404(ctx, request)["runs"]))


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
    amounts = [float(service["price"]) * int(service["quantity"]) for service in services]
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
        "totalAmount": round(sum(amounts), 2),
        "services": services,
        "billings": [{"billingType": "Once", "amount": amount} for amount in amounts],
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
    billings = proposal["billings"]
    pricing = {
        "proposalKey": proposal["proposalKey"],
        "services": proposal["services"],
        "invoices": [row for row in billings if row["billingType"] == "Once"],
        "recurringBillings": [row for row in billings if row["billingType"] != "Once"],
        "jobs": proposal["jobs"],
    }
    return ok(pricing)


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
    return ok(_copy(ctx.practice, proposal_or_404(ctx.practice, request.path_params["key"])), 201)


async def renew_preview(ctx: Ctx, request: Request) -> Response:
    """What a renew would create, and the signatories to choose from."""
    original = proposal_or_404(ctx.practice, request.path_params["key"])
    entity = ctx.practice.entities.get(original["entityKey"])
    signatories = [{"signatoryKey": entity.key, "name": entity.name}] if entity else []
    preview = {key: original[key] for key in ("proposalKey", "title", "totalAmount", "services")}
    return ok({**preview, "signatories": signatories})


async def renew(ctx: Ctx, request: Request) -> Response:
    """The original becomes Renewed; a new Draft with copied pricing is returned."""
    original = proposal_or_404(ctx.practice, request.path_params["key"])
    await read_body(request, RenewBody, optional=True)
    proposal = _copy(ctx.practice, original)
    proposal["renewedFrom"] = original["proposalKey"]
    original.update(status="Renewed", updatedOn=format_time(ctx.practice.now()))
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


_BILL_ID = "/api/v1/bills/{billingId:int}"
_LEDGER = "/api/v1/bills/ledger/"
_RECURRING = "/api/v1/recurring-billing/{recurringBillingId:int}"
_KEY = "/api/v1/proposals/{key:uuid}"

# fmt: off
OPS = [
    Op("POST", "/api/v1/bills", create_bill, "Create an adhoc bill", "bills", body=BillBody),
    Op("GET", "/api/v1/bills/list", list_bills, "Bills by bill-date range", "bills",
       query=(Param("startDate", format="date"), Param("endDate", format="date"), PAGE_NUMBER,
              PAGE_SIZE), guess=True),
    Op("GET", _LEDGER + "status", ledger_status, "Ledger connection", "ledger", guess=True),
    settings_op(_LEDGER + "accounts", "ledger_accounts", "Ledger accounts", "ledger"),
    settings_op(_LEDGER + "tax-rates", "ledger_tax_rates", "Ledger tax rates", "ledger"),
    settings_op(_LEDGER + "branding-themes", "branding_themes", "Branding themes", "ledger"),
    Op("GET", _BILL_ID, get_bill, "Load a bill", "bills", guess=True),
    Op("GET", _BILL_ID + "/pdf", bill_pdf, "Invoice PDF", "bills", guess=True,
       produces="application/pdf"),
    Op("GET", "/api/v1/recurring-billing/list", list_recurring, "Recurring billing schedules",
       "recurring-billing", query=(PAGE_NUMBER, PAGE_SIZE), guess=True),
    Op("GET", _RECURRING, get_recurring, "Load a schedule", "recurring-billing", guess=True),
    Op("GET", _RECURRING + "/runs", recurring_runs, "Runs of a schedule", "recurring-billing",
       guess=True),
    Op("GET", "/api/v1/proposals/list", list_proposals, "Proposals of a client", "proposals",
       query=(Param("entityKey", format="uuid", required=True), PAGE_NUMBER, PAGE_SIZE),
       guess=True),
    *(_catalog(name) for name in ("services", "xpm-job-templates", "xpm-job-categories",
                                  "xpm-staff", "fyi-job-templates", "fyi-job-states")),
    Op("POST", "/api/v1/proposals", create_proposal, "Create an adhoc proposal", "proposals",
       body=ProposalBody, guess=True),
    Op("POST", "/api/v1/proposals/from-template", from_template, "Proposal from a template",
       "proposals", body=ProposalFromTemplateBody, guess=True),
    Op("GET", _KEY, get_proposal, "Load a proposal", "proposals", guess=True),
    Op("GET", _KEY + "/pricing", get_pricing, "Pricing of a proposal", "proposals", guess=True),
    Op("GET", _KEY + "/renew-preview", renew_preview, "Preview a renew", "proposals", guess=True),
    Op("POST", _KEY + "/renew", renew, "Renew a proposal", "proposals", body=RenewBody,
       body_optional=True),
    Op("POST", _KEY + "/duplicate", duplicate, "Duplicate a proposal", "proposals"),
]
# fmt: on
