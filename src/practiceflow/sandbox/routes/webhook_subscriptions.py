"""Webhook subscriptions: subscribe, list events, unsubscribe, test delivery."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from practiceflow.sandbox.bodies import WebhookBody
from practiceflow.sandbox.deliveries import is_loopback_url
from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.routes.common import Ctx, Op, found, ok, read_body
from practiceflow.sandbox.state import EVENTS


def public_subscription(row: dict[str, Any]) -> dict[str, Any]:
    """A subscription without its secret (the secret is returned once, on create)."""
    return {key: value for key, value in row.items() if key != "secret"}


async def subscribe(ctx: Ctx, request: Request) -> Response:
    """One subscription row per event; the server generates the secret."""
    body = await read_body(request, WebhookBody)
    url = body.hookUrl if body.hookUrl is not None else body.targetUrl
    if url is None:
        raise ApiProblem(400, "hookUrl (or targetUrl) is required")
    if body.webhookEvent not in EVENTS:
        valid = ", ".join(EVENTS)
        raise ApiProblem(400, f"webhookEvent: got {body.webhookEvent!r}; valid values are {valid}")
    if not is_loopback_url(url):
        detail = (
            f"hookUrl: got {url!r}; the sandbox only delivers to http(s) URLs on 127.0.0.1, "
            "localhost or [::1]"
        )
        raise ApiProblem(400, detail)
    practice = ctx.practice
    key = practice.new_uuid()
    secret = f"whsec_{practice.rng.getrandbits(192):048x}"
    row = {
        "id": key,
        "url": url,
        "event": body.webhookEvent,
        "webhookName": body.webhookName,
        "createdOn": ctx.state.now_text(),
        "secret": secret,
    }
    practice.subscriptions[key] = row
    location = {"Location": f"/{ctx.region}/api/v1/webhooks/{key}"}
    return ok({**public_subscription(row), "webhookSecret": secret}, 201, location)


async def list_subscriptions(ctx: Ctx, request: Request) -> Response:
    """Subscriptions of the practice, secrets never included (guessed route)."""
    return ok([public_subscription(row) for row in ctx.practice.subscriptions.values()])


def _subscription(ctx: Ctx, request: Request) -> dict[str, Any]:
    key = str(request.path_params["id"])
    return found(ctx.practice.subscriptions, key, "Webhook subscription", "")


async def get_subscription(ctx: Ctx, request: Request) -> Response:
    """One subscription, without its secret (guessed route)."""
    return ok(public_subscription(_subscription(ctx, request)))


async def events(ctx: Ctx, request: Request) -> Response:
    """The supported event keys (a bare array of strings; guess)."""
    return ok(list(EVENTS))


async def unsubscribe(ctx: Ctx, request: Request) -> Response:
    """Delete a subscription; 404 when unknown."""
    row = _subscription(ctx, request)
    del ctx.practice.subscriptions[row["id"]]
    return ok({"id": row["id"], "deleted": True})


async def test_delivery(ctx: Ctx, request: Request) -> Response:
    """Queue a test delivery of the subscription's event with sample data."""
    row = _subscription(ctx, request)
    event_id = ctx.practice.new_uuid()
    marker = ctx.state.variants.pick("test_marker")
    data: dict[str, Any] = {}
    if marker == "isTest":
        data = {"isTest": True, "message": "Test delivery from the practiceflow sandbox."}
    elif marker == "sample":
        data = _sample(ctx.practice.new_uuid(), row["event"])
    ctx.state.dispatcher.enqueue(ctx.region, row, row["event"], event_id, data, ctx.state.variants)
    return ok({"id": row["id"], "event": row["event"], "eventId": event_id, "queued": True})


def _sample(key: str, event: str) -> dict[str, Any]:
    """Made-up fields of ``event``, as a service without a test marker might send."""
    samples: dict[str, dict[str, Any]] = {
        "proposal.accepted": {
            "proposalKey": key,
            "entityKey": key,
            "title": "Sample",
            "status": "Accepted",
            "totalAmount": 100.0,
        },
        "eform.submitted": {"formKey": key, "templateId": 1, "entityKey": key},
        "onboarding.completed": {"onboardingKey": key, "status": "Completed", "entityKeys": [key]},
    }
    return samples.get(event, {"entityKey": key, "entityName": "Sample"})


_HOOKS = "/api/v1/webhooks"
_ID = _HOOKS + "/{id:uuid}"

# fmt: off
OPS = [
    Op("POST", _HOOKS, subscribe, "Subscribe to an event", "webhooks", body=WebhookBody),
    Op("GET", _HOOKS, list_subscriptions, "List subscriptions", "webhooks", guess=True),
    Op("GET", _HOOKS + "/events", events, "Supported event keys", "webhooks"),
    Op("GET", _ID, get_subscription, "Load a subscription", "webhooks", guess=True),
    Op("DELETE", _ID, unsubscribe, "Unsubscribe", "webhooks"),
    Op("POST", _ID + "/test", test_delivery, "Send a test delivery", "webhooks",
       statuses=(200, 403, 404)),
]
# fmt: on
