"""What ``/openapi.json`` says about request bodies beyond their pydantic models.

The routes check more than a model can say: a field that is one of a practice's fixed
settings (entity types, lead sources and statuses, eForm and proposal templates, catalog
services, webhook events), one of several fields that must be given (``entityType`` or
``entityTypeID``, ``hookUrl`` or ``targetUrl``, ``taxAmount`` or ``taxPercent``, a new
contact's name or email), a subscriber
URL on loopback. The document states the same rules, so that a request the document calls
valid is one the sandbox accepts (schemathesis's ``positive_data_acceptance`` holds it to
that). The values are those of the region the document describes, read from a practice
seeded without entities (the settings do not depend on the seed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from practiceflow.sandbox.clock import SandboxClock
from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.routes.proposals import PROPOSAL_TEMPLATES
from practiceflow.sandbox.seed import build_practice
from practiceflow.sandbox.state import EVENTS

#: ``http(s)`` on a loopback host, any port and path (the only URLs the sandbox calls).
LOOPBACK_URL = r"^https?://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{1,5})?([/?#].*)?$"


def _enum(schema: dict[str, Any], name: str, values: Sequence[Any]) -> None:
    """Restrict property ``name`` to ``values`` (``null`` stays allowed where it was)."""
    prop = schema["properties"][name]
    branches = prop.get("anyOf")
    target = next(b for b in branches if b.get("type") != "null") if branches else prop
    target["enum"] = list(values)


def _one_of_fields(schema: dict[str, Any], *alternatives: dict[str, Any]) -> None:
    """At least one alternative's fields must be present and not null."""
    schema["anyOf"] = [{"required": list(fields), "properties": fields} for fields in alternatives]


def refine_bodies(schemas: dict[str, Any], region: str) -> None:
    """Add the routes' rules to the body schemas of ``region``'s document, in place.

    Args:
        schemas: ``components.schemas`` built from the body models.
        region: the region the document describes (its settings lists).
    """
    practice = build_practice(SandboxConfig(entities=0), region, SandboxClock())
    type_words = [row["code"] for row in practice.entity_types]
    type_words += [row["name"] for row in practice.entity_types]
    type_ids = [row["entityTypeID"] for row in practice.entity_types]
    services = [row["serviceID"] for row in practice.catalogs["services"]]
    eform_templates = [row["formTemplateId"] for row in practice.eform_templates]
    text = {"type": "string", "minLength": 1}

    entity = schemas["EntityBody"]
    _enum(entity, "entityType", type_words)
    _enum(entity, "entityTypeID", type_ids)
    _enum(entity, "clientStatus", ["Lead", "Active"])
    _one_of_fields(
        entity,
        {"entityType": {"type": "string", "enum": type_words}},
        {"entityTypeID": {"type": "integer", "enum": type_ids}},
    )

    lead = schemas["LeadBody"]
    _enum(lead, "entityType", type_words)
    _enum(lead, "leadSource", [row["name"] for row in practice.lead_sources])
    _enum(lead, "leadStatus", [row["name"] for row in practice.lead_statuses])

    client = schemas["OnboardingClientBody"]
    _enum(client, "entityType", type_words)
    _one_of_fields(
        client,
        {"entityKey": {"type": "string", "format": "uuid"}},
        {"entityType": {"type": "string", "enum": type_words}, "entityName": text},
    )

    eform = schemas["EformSendBody"]
    _enum(eform, "templateId", eform_templates)
    _one_of_fields(
        eform,
        {"entityKey": {"type": "string", "format": "uuid"}},
        {"recipient": {"$ref": "#/components/schemas/Recipient"}},
    )

    hook = schemas["WebhookBody"]
    _enum(hook, "webhookEvent", list(EVENTS))
    url = {"type": "string", "pattern": LOOPBACK_URL}
    for name in ("hookUrl", "targetUrl"):
        hook["properties"][name]["anyOf"][0] = dict(url)
    # the route reads hookUrl first: when it is given, it is the URL that must be loopback
    hook["anyOf"] = [
        {"required": ["hookUrl"], "properties": {"hookUrl": url}},
        {"required": ["targetUrl"], "properties": {"hookUrl": {"type": "null"}, "targetUrl": url}},
    ]

    _one_of_fields(
        schemas["NewContactBody"], {"firstName": text}, {"lastName": text}, {"email": text}
    )

    _enum(schemas["ProposalServiceBody"], "serviceID", services)
    _enum(schemas["ProposalFromTemplateBody"], "templateId", list(PROPOSAL_TEMPLATES))

    line = schemas["BillLineBody"]
    line["properties"]["amount"] = {"type": "number", "description": "tax-exclusive amount"}
    line["required"] = ["amount"]
    _one_of_fields(line, {"taxAmount": {"type": "number"}}, {"taxPercent": {"type": "number"}})
