"""The admin routes as data: what ``sandbox --help`` and ``GET /_admin`` list (a test checks them
against the admin app and runs every example). Imports nothing heavy: ``--help`` stays fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AdminRoute:
    """One admin route and an example of its use (``{key}`` stands for a record's key);
    ``example`` is the example's path when it is not the route's own."""

    method: str
    path: str
    summary: str
    example_body: dict[str, Any] | None = None
    example: str = ""

    @property
    def example_path(self) -> str:
        """The path the example calls."""
        return self.example or self.path


ADMIN_ROUTES: tuple[AdminRoute, ...] = (
    AdminRoute("GET", "/_admin", "this list, credentials, regions, clock offset"),
    AdminRoute("POST", "/_admin/reset", "back to the seed (optional seed, entities)", {}),
    AdminRoute(
        "GET",
        "/_admin/config",
        "switches of a region (?region=anz)",
        example="/_admin/config?region=anz",
    ),
    AdminRoute(
        "POST",
        "/_admin/config",
        "set walletBalance, ledgerConnected, eformEmailFails, duplicateDeliveries, "
        "rateLimits {perMinute, perHour, perDay}, pageSize, latencyMs, jitterMs",
        {"ledgerConnected": True},
    ),
    AdminRoute("GET", "/_admin/clock", "the clock offset and the sandbox's now"),
    AdminRoute(
        "POST",
        "/_admin/clock",
        'move the clock: {"advance": seconds} or {"offset": seconds}',
        {"advance": 3600},
    ),
    AdminRoute("GET", "/_admin/faults", "the armed faults"),
    AdminRoute(
        "POST",
        "/_admin/faults",
        "arm a fault: kind (rate_limit|429, server_error|500, slow, drop), count, method, "
        "pathPrefix, region, retryAfter, delay",
        {"kind": "429", "count": 2, "retryAfter": 1},
    ),
    AdminRoute("DELETE", "/_admin/faults", "disarm every fault"),
    AdminRoute(
        "POST", "/_admin/proposals/{key}/accept", "accept a proposal; fires proposal.accepted", {}
    ),
    AdminRoute(
        "POST", "/_admin/eforms/{key}/submit", "submit a sent eForm; fires eform.submitted", {}
    ),
    AdminRoute(
        "POST",
        "/_admin/onboardings/{key}/complete",
        "complete an onboarding (documents uploaded); fires onboarding.completed",
        {},
    ),
    AdminRoute(
        "POST",
        "/_admin/entities",
        "create a client or lead behind the API client's back; fires client.created or "
        "lead.created",
        {"entityName": "Harbour Trust", "entityType": "Company", "clientStatus": "Active"},
    ),
    AdminRoute(
        "PATCH",
        "/_admin/entities/{key}",
        "change entityName, entitySurname, email, status, leadStatus; bumps lastUpdated",
        {"leadStatus": "Won"},
    ),
    AdminRoute(
        "GET",
        "/_admin/records/{kind}",
        "stored rows: entities, leads, contacts, groups, bills, proposals, eforms, "
        "onboardings, subscriptions, id-verifications, recurring, users",
        example="/_admin/records/proposals",
    ),
    AdminRoute("GET", "/_admin/deliveries", "webhook delivery log, one row per attempt"),
    AdminRoute(
        "GET", "/_admin/requests", "every API request received (method, path, client id, status)"
    ),
    AdminRoute(
        "GET", "/_admin/variants", "the answer played to each question the spec leaves open"
    ),
    AdminRoute(
        "POST",
        "/_admin/variants",
        "play other answers (preset default, hostile or random:SEED; set TOPIC: ANSWER)",
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
