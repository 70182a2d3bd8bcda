"""The admin surface under ``/_admin`` (header ``X-Admin-Token``), for tests and demos; its routes
are listed once, with examples, in :mod:`practiceflow.sandbox.admin_catalogue`. A route that
involves a practice takes ``?region=`` (default ``anz``) and ``?practice=K`` (default 0).
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from typing import Any, TypeVar

import pydantic
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router
from starlette.types import Receive, Scope, Send

from practiceflow.sandbox.admin_catalogue import route_catalogue
from practiceflow.sandbox.bodies import EntityBody
from practiceflow.sandbox.config import REGIONS, RateLimits
from practiceflow.sandbox.problems import (
    ApiProblem,
    allow_header,
    log_disconnect,
    problem_response,
)
from practiceflow.sandbox.routes.billing import proposal_or_404
from practiceflow.sandbox.routes.common import entity_or_404, found
from practiceflow.sandbox.routes.entities import create_entity, group_view
from practiceflow.sandbox.routes.onboarding import onboarding_or_404
from practiceflow.sandbox.routes.webhook_subscriptions import public_subscription
from practiceflow.sandbox.state import FAULT_KINDS, Fault, RateLimiter, SandboxState
from practiceflow.sandbox.store import Practice, mark_uploaded
from practiceflow.sandbox.variants import TOPICS, Variants

logger = logging.getLogger(__name__)
ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)
#: The fields of a proposal that its ``proposal.accepted`` event carries.
_ACCEPTED = (
    "proposalKey",
    "entityKey",
    "entityName",
    "title",
    "status",
    "acceptedOn",
    "totalAmount",
)


class _EntityPatch(pydantic.BaseModel):
    entityName: str | None = None
    entitySurname: str | None = None
    email: str | None = None
    status: str | None = None
    leadStatus: str | None = None


async def _json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise ApiProblem(400, "The body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise ApiProblem(400, "The body must be a JSON object.")
    return data


async def _validated(request: Request, model: type[ModelT], what: str) -> ModelT:
    try:
        return model.model_validate(await _json(request))
    except pydantic.ValidationError as exc:
        raise ApiProblem(400, f"{what}: {exc.errors()[0]['msg']}") from None


class AdminApp:
    """The admin ASGI app bound to ``state``; it checks ``X-Admin-Token`` first."""

    def __init__(self, state: SandboxState) -> None:
        self.state = state
        self.router = Router(
            routes=[
                Route("/_admin", self.info, methods=["GET"]),
                Route("/_admin/reset", self.reset, methods=["POST"]),
                Route("/_admin/config", self.config, methods=["GET", "POST"]),
                Route("/_admin/clock", self.clock, methods=["GET", "POST"]),
                Route("/_admin/faults", self.faults, methods=["GET", "POST", "DELETE"]),
                Route("/_admin/proposals/{key}/accept", self.accept, methods=["POST"]),
                Route("/_admin/eforms/{key}/submit", self.submit, methods=["POST"]),
                Route("/_admin/onboardings/{key}/complete", self.complete, methods=["POST"]),
                Route("/_admin/entities", self.create_entity, methods=["POST"]),
                Route("/_admin/entities/{key}", self.patch_entity, methods=["PATCH"]),
                Route("/_admin/records/{kind}", self.records, methods=["GET"]),
                Route("/_admin/deliveries", self.deliveries, methods=["GET"]),
                Route("/_admin/requests", self.requests, methods=["GET"]),
                Route("/_admin/variants", self.variants, methods=["GET", "POST"]),
            ],
            redirect_slashes=False,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        token = dict(scope.get("headers", [])).get(b"x-admin-token", b"").decode("latin-1")
        expected = self.state.config.admin_token
        try:
            if not hmac.compare_digest(token.encode(), expected.encode()):
                raise ApiProblem(
                    401,
                    "The X-Admin-Token header is missing or wrong (the sandbox prints its "
                    "token at start-up; 'practiceflow sandbox --help' lists the routes).",
                )
            await self.router(scope, receive, send)
        except ApiProblem as problem:
            await problem_response(problem.status, problem.detail, path)(scope, receive, send)
        except ClientDisconnect:
            log_disconnect(logger, scope["method"], path)
        except HTTPException as exc:
            allow = {"Allow": allow_header(self.router, scope)} if exc.status_code == 405 else {}
            answer = problem_response(exc.status_code, str(exc.detail), path, allow)
            await answer(scope, receive, send)

    def _practice(self, request: Request) -> Practice:
        region = request.query_params.get("region", REGIONS[0])
        if region not in REGIONS:
            raise ApiProblem(400, f"region: got {region!r}; valid values are {list(REGIONS)}")
        text = request.query_params.get("practice", "0")
        count = self.state.config.practices
        if not text.isdigit() or int(text) >= count:
            raise ApiProblem(400, f"practice: got {text!r}; expected 0 to {count - 1}")
        return self.state.practice(region, int(text))

    async def info(self, request: Request) -> Response:
        root = str(request.base_url).rstrip("/")
        credentials = {
            region: {
                kind: {
                    "clientId": c.client_id,
                    "secret": c.secret,
                    "canWrite": c.can_write,
                    "active": c.active,
                }
                for kind, c in kinds.items()
            }
            for region, kinds in self.state.credentials.items()
        }
        answer = {
            "regions": list(REGIONS),
            "credentials": credentials,
            "clockOffset": self.state.clock.offset,
            "routes": route_catalogue(root, self.state.config.admin_token),
        }
        return JSONResponse(answer)

    async def reset(self, request: Request) -> Response:
        body = await _json(request)
        seed, entities = body.get("seed"), body.get("entities")
        if seed is not None and not isinstance(seed, int):
            raise ApiProblem(400, f"seed: got {seed!r}; expected an integer")
        if entities is not None and (not isinstance(entities, int) or not 0 <= entities <= 100_000):
            raise ApiProblem(400, f"entities: got {entities!r}; expected 0 to 100000")
        self.state.reset(seed=seed, entities=entities)
        return JSONResponse({"reset": True, "seed": self.state.config.seed})

    async def config(self, request: Request) -> Response:
        practice = self._practice(request)
        if request.method == "POST":
            body = await _json(request)
            try:
                if "walletBalance" in body:
                    practice.wallet = float(body["walletBalance"])
                if "ledgerConnected" in body:
                    practice.ledger_connected = bool(body["ledgerConnected"])
                if "eformEmailFails" in body:
                    practice.eform_email_fails = bool(body["eformEmailFails"])
                if "duplicateDeliveries" in body:
                    self.state.duplicate_deliveries = max(1, int(body["duplicateDeliveries"]))
                if "rateLimits" in body:
                    given = body["rateLimits"]
                    limits = self.state.limiter.limits
                    limits = RateLimits(
                        per_minute=int(given.get("perMinute", limits.per_minute)),
                        per_hour=int(given.get("perHour", limits.per_hour)),
                        per_day=int(given.get("perDay", limits.per_day)),
                    )
                    # new windows: budgets start afresh, until the next reset
                    self.state.limiter = RateLimiter(limits, self.state.clock)
                if "pageSize" in body:
                    self.state.config = replace(self.state.config, page_size=int(body["pageSize"]))
                if "latencyMs" in body or "jitterMs" in body:
                    config = self.state.config
                    self.state.config = replace(
                        config,
                        latency=float(body.get("latencyMs", config.latency * 1000)) / 1000,
                        jitter=float(body.get("jitterMs", config.jitter * 1000)) / 1000,
                    )
            except (TypeError, ValueError, AttributeError) as exc:
                raise ApiProblem(400, f"config: {exc}") from None
        state = self.state
        answer = {
            "region": practice.region,
            "walletBalance": practice.wallet,
            "ledgerConnected": practice.ledger_connected,
            "eformEmailFails": practice.eform_email_fails,
            "duplicateDeliveries": state.duplicate_deliveries,
            "rateLimits": asdict(state.limiter.limits),
            "pageSize": state.config.page_size,
            "latencyMs": round(state.config.latency * 1000, 3),
            "jitterMs": round(state.config.jitter * 1000, 3),
            "seed": state.config.seed,
            "entities": state.config.entities,
        }
        return JSONResponse(answer)

    async def variants(self, request: Request) -> Response:
        state = self.state
        if request.method == "POST":
            body = await _json(request)
            preset, changes = body.get("preset"), body.get("set", {})
            if preset is not None and not isinstance(preset, str):
                detail = f"preset: got {preset!r}; expected default, hostile or random:N"
                raise ApiProblem(400, detail)
            if not isinstance(changes, dict) or not all(
                isinstance(value, str) for value in changes.values()
            ):
                raise ApiProblem(400, "set: expected an object of topic -> answer (strings)")
            try:
                base = Variants.preset(preset) if preset is not None else state.variants
                state.variants = Variants({**base.as_dict(), **changes})
            except ValueError as exc:
                raise ApiProblem(400, str(exc)) from None
        topics = [
            {
                "topic": topic.name,
                "question": topic.question,
                "answers": list(topic.answers),
                "default": topic.default,
                "hostile": topic.hostile,
                "chosen": state.variants.pick(topic.name),
            }
            for topic in TOPICS
        ]
        return JSONResponse({"topics": topics, "differences": state.variants.differences()})

    async def clock(self, request: Request) -> Response:
        if request.method == "POST":
            body = await _json(request)
            try:
                if "offset" in body:
                    self.state.clock.offset = float(body["offset"])
                if "advance" in body:
                    self.state.clock.advance(float(body["advance"]))
            except (TypeError, ValueError):
                raise ApiProblem(400, "clock: advance and offset are seconds (numbers)") from None
        return JSONResponse({"offset": self.state.clock.offset, "now": self.state.now_text()})

    async def faults(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.state.faults.clear()
        elif request.method == "POST":
            fault = await _validated(request, Fault, "fault")
            kind = FAULT_KINDS.get(fault.kind)
            if kind is None:
                detail = f"kind: got {fault.kind!r}; valid values are {list(FAULT_KINDS)}"
                raise ApiProblem(400, detail)
            fault.kind = kind
            self.state.faults.add(fault)
        return JSONResponse(self.state.faults.describe())

    async def accept(self, request: Request) -> Response:
        practice = self._practice(request)
        proposal = proposal_or_404(practice, request.path_params["key"])
        now = self.state.now_text()
        proposal.update(status="Accepted", acceptedOn=now, updatedOn=now)
        data = {key: proposal[key] for key in _ACCEPTED}
        event_id = self.state.emit(practice, "proposal.accepted", data)
        return JSONResponse({"proposal": proposal, "eventId": event_id})

    async def submit(self, request: Request) -> Response:
        practice = self._practice(request)
        form = found(practice.eforms, request.path_params["key"], "eForm", "")
        now = self.state.now_text()
        form.update(status="Submitted", submittedOn=now)
        data = {
            "formKey": form["formKey"],
            "templateId": form["templateId"],
            "entityKey": form.get("entityKey"),
            "submittedOn": now,
        }
        event_id = self.state.emit(practice, "eform.submitted", data)
        return JSONResponse({"eform": form, "eventId": event_id})

    async def complete(self, request: Request) -> Response:
        practice = self._practice(request)
        job = onboarding_or_404(practice, request.path_params["key"])
        job.update(status="Completed", updatedOn=self.state.now_text())
        for row in job["clients"]:
            for document in row["documents"]:
                if not document["isBypassed"]:
                    mark_uploaded(document)
            entity = practice.entities.get(row["entityKey"])
            if entity is not None:
                practice.touch(entity)
        data = {
            "onboardingKey": job["onboardingKey"],
            "status": "Completed",
            "entityKeys": [row["entityKey"] for row in job["clients"]],
        }
        event_id = self.state.emit(practice, "onboarding.completed", data)
        return JSONResponse({"onboarding": job, "eventId": event_id})

    async def create_entity(self, request: Request) -> Response:
        practice = self._practice(request)
        body = await _validated(request, EntityBody, "entity")
        entity = create_entity(practice, body)
        event = "lead.created" if entity.status == "Lead" else "client.created"
        self.state.emit(practice, event, {"entityKey": entity.key, "entityName": entity.name})
        return JSONResponse(practice.entity_detail(entity), status_code=201)

    async def patch_entity(self, request: Request) -> Response:
        practice = self._practice(request)
        entity = entity_or_404(practice, request.path_params["key"])
        body = await _validated(request, _EntityPatch, "entity")
        if body.status is not None and body.status not in ("Lead", "Active"):
            raise ApiProblem(400, f"status: got {body.status!r}; valid values are Lead, Active")
        entity.name = body.entityName or entity.name
        entity.surname = body.entitySurname or entity.surname
        entity.email = body.email or entity.email
        entity.status = body.status or entity.status
        entity.lead_status = body.leadStatus or entity.lead_status
        practice.touch(entity)
        return JSONResponse(practice.entity_detail(entity))

    async def records(self, request: Request) -> Response:
        practice = self._practice(request)
        kind = request.path_params["kind"]
        views: dict[str, Callable[[], Iterable[Any]]] = {
            "entities": lambda: map(practice.entity_detail, practice.order),
            "leads": lambda: (e.lead_view() for e in practice.order if e.status == "Lead"),
            "groups": lambda: (group_view(practice, group, True) for group in practice.groups),
            "subscriptions": lambda: map(public_subscription, practice.subscriptions.values()),
            "users": lambda: practice.users,
            "contacts": practice.contacts.values,
            "bills": practice.bills.values,
            "proposals": practice.proposals.values,
            "eforms": practice.eforms.values,
            "onboardings": practice.onboardings.values,
            "id-verifications": practice.id_verifications.values,
            "recurring": practice.recurring.values,
        }
        if kind not in views:
            raise ApiProblem(404, f"records: got {kind!r}; valid kinds are {list(views)}")
        return JSONResponse(list(views[kind]()))

    async def deliveries(self, request: Request) -> Response:
        del request
        return JSONResponse(self.state.dispatcher.log())

    async def requests(self, request: Request) -> Response:
        del request
        return JSONResponse(self.state.request_log())
