"""The sandbox's admin routes as data: what ``sandbox --help`` and ``GET /_admin`` list.

A test checks :data:`ADMIN_ROUTES` against the routes the admin app has and runs every
example. Nothing heavy is imported here, so that ``practiceflow sandbox --help`` stays fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AdminRoute:
    """One admin route and an example of its use (``{key}`` stands for a record's key)."""

    method: str
    path: str
    summary: str
    example_path: str
    example_body: dict[str, Any] | None = None


ADMIN_ROUTES: tuple[AdminRoute, ...] = (
    AdminRoute("GET", "/_admin", "this list, credentials, regions, clock offset", "/_admin"),
    AdminRoute(
        "POST", "/_admin/reset", "back to the seed (optional seed, entities)", "/_admin/reset", {}
    ),
    AdminRoute(
        "GET", "/_admin/config", "switches of a region (?region=anz)", "/_admin/config?region=anz"
    ),
    AdminRoute(
        "POST",
        "/_admin/config",
        "set walletBalance, ledgerConnected, eformEmailFails, duplicateDeliveries, "
        "rateLimits {perMinute, perHour, perDay}, pageSize, latencyMs, jitterMs",
        "/_admin/config",
        {"ledgerConnected": True},
    ),
    AdminRoute("GET", "/_admin/clock", "the clock offset and the sandbox's now", "/_admin/clock"),
    AdminRoute(
        "POST",
        "/_admin/clock",
        'move the clock: {"advance": seconds} or {"offset": seconds}',
        "/_admin/clock",
        {"advance": 3600},
    ),
    AdminRoute("GET", "/_admin/faults", "the armed faults", "/_admin/faults"),
    AdminRoute(
        "POST",
        "/_admin/faults",
        "arm a fault: kind (rate_limit|429, server_error|500, slow, drop), count, method, "
        "pathPrefix, region, retryAfter, delay",
        "/_admin/faults",
        {"kind": "429", "count": 2, "retryAfter": 1},
    ),
    AdminRoute("DELETE", "/_admin/faults", "disarm every fault", "/_admin/faults"),
    AdminRoute(
        "POST",
        "/_admin/proposals/{key}/accept",
        "accept a proposal; fires proposal.accepted",
        "/_admin/proposals/{key}/accept",
        {},
    ),
    AdminRoute(
        "POST",
        "/_admin/eforms/{key}/submit",
        "submit a sent eForm; fires eform.submitted",
        "/_admin/eforms/{key}/submit",
        {},
    ),
    AdminRoute(
        "POST",
        "/_admin/onboardings/{key}/complete",
        "complete an onboarding (documents uploaded); fires onboarding.completed",
        "/_admin/onboardings/{key}/complete",
        {},
    ),
    AdminRoute(
        "POST",
        "/_admin/entities",
        "create a client or lead behind the API client's back; fires client.created or "
        "lead.created",
        "/_admin/entities",
        {"entityName": "Harbour Trust", "entityType": "Company", "clientStatus": "Active"},
    ),
    AdminRoute(
        "PATCH",
        "/_admin/entities/{key}",
        "change entityName, entitySurname, email, status, leadStatus; bumps lastUpdated",
        "/_admin/entities/{key}",
        {"leadStatus": "Won"},
    ),
    AdminRoute(
        "GET",
        "/_admin/records/{kind}",
        "stored rows: entities, leads, contacts, groups, bills, proposals, eforms, "
        "onboardings, subscriptions, id-verifications, recurring, users",
        "/_admin/records/proposals",
    ),
    AdminRoute(
        "GET",
        "/_admin/deliveries",
        "webhook delivery log, one row per attempt",
        "/_admin/deliveries",
    ),
    AdminRoute(
        "GET",
        "/_admin/requests",
        "every API request received (method, path, client id, status)",
        "/_admin/requests",
    ),
    AdminRoute(
        "GET",
        "/_admin/variants",
        "the answer played to each question the spec leaves open",
        "/_admin/variants",
    ),
    AdminRoute(
        "POST",
        "/_admin/variants",
        "play other answers (preset default, hostile or random:SEED; set TOPIC: ANSWER)",
        "/_admin/variants",
        {"preset": "hostile", "set": {"rounding": "per_total"}},
    ),
)


def curl_example(route: AdminRoute, root: str, token: str) -> str:
    """A ready-to-run ``curl`` line for a route's example against ``root``."""
    parts = ["curl", f"-H 'X-Admin-Token: {token}'"]
    if route.method != "GET":
        parts.append(f"-X {route.method}")
    if route.example_body is not None:
        parts.append(f"-d '{json.dumps(route.example_body)}'")
    parts.append(f"'{root}{route.example_path}'")
    return " ".join(parts)


def route_catalogue(root: str, token: str) -> list[dict[str, Any]]:
    """The routes as JSON-ready rows, each with its curl example (for ``GET /_admin``)."""
    return [
        {
            "method": route.method,
            "path": route.path,
            "summary": route.summary,
            "example": curl_example(route, root, token),
            "body": route.example_body,
        }
        for route in ADMIN_ROUTES
    ]
