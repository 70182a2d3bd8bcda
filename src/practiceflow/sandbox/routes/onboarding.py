"""Onboarding jobs and their documents, eForms, and identity / AML checks."""

from __future__ import annotations

import io
import zipfile
from typing import Any
from uuid import UUID

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import (
    AmlCheckBody,
    EformSendBody,
    EntityBody,
    IdVerificationBody,
    OnboardingBody,
)
from practiceflow.sandbox.clock import format_time
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.billing import pdf_bytes
from practiceflow.sandbox.routes.common import (
    PAGE_NUMBER,
    PAGE_SIZE,
    Ctx,
    Op,
    entity_or_404,
    envelope,
    found,
    ok,
    page_number,
    page_size,
    read_body,
)
from practiceflow.sandbox.routes.entities import create_entity
from practiceflow.sandbox.store import Entity, Practice


def onboarding_or_404(practice: Practice, key: object) -> dict[str, Any]:
    """The onboarding job with this key, or a 404 problem."""
    return found(practice.onboardings, str(key), "Onboarding")


def _access_url(region: str, kind: str, key: str) -> str:
    return f"https://portal.sandbox.invalid/{region}/{kind}/{key}"


async def create_onboarding(ctx: Ctx, request: Request) -> Response:
    """Sent when ``sendToRecipient`` and the wallet covers it; Draft when not sending;
    400 and nothing created when the wallet is short (spec section 3)."""
    practice = ctx.practice
    body = await read_body(request, OnboardingBody)
    user_keys = [user["userKey"] for user in practice.users]
    if body.userKey is not None and str(body.userKey) not in user_keys:
        raise ApiProblem(404, f"userKey: got {body.userKey}; no such user in this practice")
    existing: list[Entity | None] = []
    for n, row in enumerate(body.clients):
        if row.entityKey is not None:
            existing.append(entity_or_404(practice, row.entityKey))
            continue
        if not row.entityType or not row.entityName:
            detail = f"clients[{n}]: give an entityKey, or entityType and entityName (quick-add)"
            raise ApiProblem(400, detail)
        if practice.entity_type(row.entityType) is None:
            raise ApiProblem(400, f"clients[{n}].entityType: got {row.entityType!r}; unknown type")
        existing.append(None)
    cost = ctx.state.config.onboarding_cost
    if body.sendToRecipient and practice.wallet < cost:
        detail = (
            f"Insufficient wallet balance to send: {practice.wallet:.2f} available, "
            f"{cost:.2f} needed. Nothing was created."
        )
        raise ApiProblem(400, detail)
    rows = []
    for row, entity in zip(body.clients, existing, strict=True):
        if entity is None:
            quick = EntityBody.model_validate(
                {"entityType": row.entityType, "entityName": row.entityName, "clientStatus": "Lead"}
            )
            entity = create_entity(practice, quick)
        documents = practice.new_documents()
        rows.append(
            {
                "entityOnboardingId": practice.new_id(),
                "entityKey": entity.key,
                "entityName": entity.name,
                "documents": documents,
            }
        )
    if body.sendToRecipient:
        practice.wallet = round(practice.wallet - cost, 2)
    key = practice.new_uuid()
    now = format_time(practice.now())
    job = {
        "onboardingKey": key,
        "status": "Sent" if body.sendToRecipient else "Draft",
        "userKey": str(body.userKey) if body.userKey else practice.users[0]["userKey"],
        "recipient": body.recipient.model_dump(),
        "clients": rows,
        "accessUrl": _access_url(ctx.region, "onboarding", key),
        "createdOn": now,
        "updatedOn": now,
    }
    practice.onboardings[key] = job
    return ok(_job_view(job), 201, {"Location": f"/{ctx.region}/api/v1/onboardings/{key}"})


def _job_view(job: dict[str, Any]) -> dict[str, Any]:
    rows = job["clients"]
    return {**job, "clients": [{k: v for k, v in row.items() if k != "documents"} for row in rows]}


async def get_onboarding(ctx: Ctx, request: Request) -> Response:
    """One onboarding job (guessed route)."""
    return ok(_job_view(onboarding_or_404(ctx.practice, request.path_params["key"])))


async def documents(ctx: Ctx, request: Request) -> Response:
    """Document requirements per client entity (``isUploaded``, ``isBypassed``)."""
    return ok(onboarding_or_404(ctx.practice, request.path_params["key"])["clients"])


def _document(ctx: Ctx, request: Request) -> tuple[dict[str, Any], dict[str, Any] | None]:
    job = onboarding_or_404(ctx.practice, request.path_params["key"])
    wanted = request.path_params["entityOnboardingId"]
    for row in job["clients"]:
        if row["entityOnboardingId"] == wanted:
            document_id = request.path_params.get("documentId")
            if document_id is None:
                return row, None
            for document in row["documents"]:
                if document["documentId"] == document_id:
                    return row, document
    raise ApiProblem(404, "The onboarding entity or document was not found.")


async def document_url(ctx: Ctx, request: Request) -> Response:
    """A short-lived signed URL for one uploaded file."""
    _, document = _document(ctx, request)
    if document is None or not document["isUploaded"]:
        raise ApiProblem(404, "No file has been uploaded for this document.")
    expires = format_time(ctx.state.clock.now() + 300)
    token = ctx.practice.new_uuid()
    url = f"https://files.sandbox.invalid/{document['documentId']}?sig={token}"
    return ok({"url": url, "expiresAt": expires, "fileName": document["fileName"]})


async def documents_zip(ctx: Ctx, request: Request) -> Response:
    """Every uploaded file of one onboarding entity as a zip."""
    row, _ = _document(ctx, request)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for document in row["documents"]:
            if document["isUploaded"]:
                archive.writestr(document["fileName"] or "file.pdf", pdf_bytes(document["name"]))
    return Response(buffer.getvalue(), media_type="application/zip")


async def eform_templates(ctx: Ctx, request: Request) -> Response:
    """eForm templates, ``pageNumber`` and ``pageSize``, envelope (guess)."""
    query = request.query_params
    return ok(envelope(ctx.practice.eform_templates, page_number(query), page_size(query)))


async def send_eform(ctx: Ctx, request: Request) -> Response:
    """Send an eForm: ``sent: false`` when email fails, ``mute`` skips email."""
    practice = ctx.practice
    body = await read_body(request, EformSendBody)
    templates = [row["formTemplateId"] for row in practice.eform_templates]
    if body.templateId not in templates:
        valid = ", ".join(str(key) for key in templates)
        raise ApiProblem(400, f"templateId: got {body.templateId}; valid values are {valid}")
    entity = entity_or_404(practice, body.entityKey) if body.entityKey is not None else None
    if entity is None and body.recipient is None:
        raise ApiProblem(400, "entityKey (a stored client) or recipient (ad hoc) is required")
    cost = ctx.state.config.eform_cost
    if practice.wallet < cost:
        detail = f"Insufficient wallet balance: {practice.wallet:.2f} available, {cost:.2f} needed"
        raise ApiProblem(400, detail)
    sent = body.mute or not practice.eform_email_fails
    if sent:
        practice.wallet = round(practice.wallet - cost, 2)
    key = practice.new_uuid()
    form: dict[str, Any] = {
        "formKey": key,
        "templateId": body.templateId,
        "accessUrl": _access_url(ctx.region, "forms", key),
        "emailSent": sent and not body.mute,
        "sent": sent,
    }
    if entity is not None:
        form["entityKey"] = entity.key
    practice.eforms[key] = dict(
        form,
        status="Sent" if sent else "Draft",
        recipient=body.recipient.model_dump() if body.recipient else None,
        createdOn=format_time(practice.now()),
        submittedOn=None,
    )
    return ok(form, 201)


def _check(ctx: Ctx, name: str, entity_key: UUID, fields: dict[str, Any], url: bool) -> Response:
    """Store a check of a stored client under a new key ``name``: 201 and the record."""
    entity = entity_or_404(ctx.practice, entity_key)
    key = ctx.practice.new_uuid()
    record = {name: key, "entityKey": entity.key, **fields}
    if url:
        record["accessUrl"] = _access_url(ctx.region, "verify", key)
    record["createdOn"] = format_time(ctx.practice.now())
    ctx.practice.id_verifications[key] = record
    return ok(record, 201)


async def send_verification(ctx: Ctx, request: Request) -> Response:
    """Start identity verification of a client; optional AML."""
    body = await read_body(request, IdVerificationBody)
    fields = {"status": "Sent", "includeAml": body.includeAml}
    return _check(ctx, "verificationKey", body.entityKey, fields, url=True)


async def aml_check(ctx: Ctx, request: Request) -> Response:
    """A standalone AML screening of an existing client."""
    body = await read_body(request, AmlCheckBody)
    fields = {"level": body.level, "status": "Completed", "result": "Clear"}
    return _check(ctx, "amlCheckKey", body.entityKey, fields, url=False)


async def certificate(ctx: Ctx, request: Request) -> Response:
    """The verification certificate (PDF) of a client that has a verification."""
    entity = entity_or_404(ctx.practice, request.path_params["entityKey"])
    if not any(row["entityKey"] == entity.key for row in ctx.practice.id_verifications.values()):
        raise ApiProblem(404, "This client has no identity verification.")
    return Response(pdf_bytes(f"Verification {entity.name}"), media_type="application/pdf")


_JOB = "/api/v1/onboardings/{key:uuid}"
_ENT = _JOB + "/entities/{entityOnboardingId:int}/documents"

# fmt: off
OPS = [
    Op("POST", "/api/v1/onboardings/create", create_onboarding, "Create an onboarding job",
       "onboardings", body=OnboardingBody, statuses=(201, 400, 403, 404)),
    Op("GET", _JOB, get_onboarding, "Load an onboarding job", "onboardings", guess=True),
    Op("GET", _JOB + "/documents", documents, "Document requirements", "onboardings", guess=True),
    Op("GET", _ENT + "/zip", documents_zip, "Uploaded files as a zip", "onboardings", guess=True,
       produces="application/zip"),
    Op("GET", _ENT + "/{documentId:int}", document_url, "Signed URL of one file", "onboardings",
       guess=True),
    Op("GET", "/api/v1/eforms/templates", eform_templates, "eForm templates", "eforms",
       query=(PAGE_NUMBER, PAGE_SIZE), guess=True),
    Op("POST", "/api/v1/eforms/send", send_eform, "Send an eForm", "eforms", body=EformSendBody),
    Op("POST", "/api/v1/id-verifications/send", send_verification, "Start ID verification",
       "id-verifications", body=IdVerificationBody, guess=True),
    Op("POST", "/api/v1/id-verifications/aml-checks", aml_check, "AML screening",
       "id-verifications", body=AmlCheckBody, guess=True),
    Op("GET", "/api/v1/id-verifications/entities/{entityKey:uuid}/certificate", certificate,
       "Verification certificate", "id-verifications", guess=True, produces="application/pdf"),
]
# fmt: on
