"""The OpenAPI 3.1 document of what the sandbox serves, built from the route table.

Paths sit under one region prefix, with both security schemes, query parameters, request
bodies (the pydantic models) and problem details; operations whose shapes the spec does not
show carry ``x-sandbox-guess: true``. The routes check more than a model says (settings
values, one of several fields, loopback URLs): :func:`refine_bodies` states the same rules,
so a request the document calls valid is one the sandbox accepts (schemathesis checks it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic.json_schema import models_json_schema

from practiceflow.sandbox.clock import SandboxClock
from practiceflow.sandbox.config import SandboxConfig
from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.sandbox.routes.billing import PROPOSAL_TEMPLATES
from practiceflow.sandbox.routes.common import Op, Param
from practiceflow.sandbox.seed import build_practice
from practiceflow.sandbox.state import EVENTS

_PARAM = re.compile(r"{(\w+)(?::(\w+))?}")
_PATH_TYPES = {
    "uuid": {"type": "string", "format": "uuid"},
    "int": {"type": "integer", "minimum": 0, "maximum": 2147483647},
    "str": {"type": "string"},
}
_PROBLEM = {
    "type": "object",
    "properties": {
        name: {"type": ["integer" if name == "status" else "string", "null"]}
        for name in ("type", "title", "status", "detail", "instance", "message")
    },
}
_PROBLEM_REF = "#/components/schemas/Problem"
_DESCRIPTIONS = {
    200: "OK",
    201: "Created",
    400: "Validation failure",
    401: "Missing, wrong or inactive credentials",
    403: "Read-only API client on a write route",
    404: "Not found in this practice",
    429: "Rate limit exceeded",
    500: "Internal server error",
}


def _query(param: Param) -> dict[str, Any]:
    given = {"format": param.format, "minimum": param.minimum, "maximum": param.maximum}
    schema = {"type": param.type} | {
        key: value for key, value in given.items() if value is not None
    }
    return {
        "name": param.name,
        "in": "query",
        "required": param.required,
        "description": param.description,
        "schema": schema,
    }


def _operation(op: Op, number: int) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": _PATH_TYPES[kind or "str"]}
        for name, kind in _PARAM.findall(op.path)
    ]
    parameters += [_query(param) for param in op.query]
    problem = {"application/problem+json": {"schema": {"$ref": _PROBLEM_REF}}}
    responses: dict[str, Any] = {
        str(status): {
            "description": _DESCRIPTIONS[status],
            "content": {op.produces: {"schema": {}}} if status < 300 else problem,
        }
        for status in (*op.answers(), 401, 429, 500)
    }
    operation: dict[str, Any] = {
        "operationId": f"{op.method.lower()}_{op.handler.__name__}_{number}",
        "summary": op.summary,
        "tags": [op.tag],
        "parameters": parameters,
        "responses": responses,
        "x-sandbox-guess": op.guess,
    }
    if op.body is not None:
        operation["requestBody"] = {
            "required": not op.body_optional,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{op.body.__name__}"}}
            },
        }
    return operation


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
    """Add the routes' rules to ``region``'s schemas in place (settings from an empty practice)."""
    practice = build_practice(SandboxConfig(entities=0), region, SandboxClock())
    type_words = [row[field] for field in ("code", "name") for row in practice.entity_types]
    type_ids = [row["entityTypeID"] for row in practice.entity_types]
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
    _enum(eform, "templateId", [row["formTemplateId"] for row in practice.eform_templates])
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

    services = practice.catalogs["services"]
    _enum(schemas["ProposalServiceBody"], "serviceID", [row["serviceID"] for row in services])
    _enum(schemas["ProposalFromTemplateBody"], "templateId", list(PROPOSAL_TEMPLATES))

    line = schemas["BillLineBody"]
    line["properties"]["amount"] = {"type": "number", "description": "tax-exclusive amount"}
    line["required"] = ["amount"]
    _one_of_fields(line, {"taxAmount": {"type": "number"}}, {"taxPercent": {"type": "number"}})


def build_openapi(region: str = "anz") -> dict[str, Any]:
    """The OpenAPI 3.1 document, paths under the ``region`` prefix."""
    bodies = sorted({op.body for op in ALL_OPS if op.body is not None}, key=lambda m: m.__name__)
    _, schemas = models_json_schema(
        [(model, "validation") for model in bodies], ref_template="#/components/schemas/{model}"
    )
    paths: dict[str, dict[str, Any]] = {}
    for number, op in enumerate(ALL_OPS, start=1):
        path = "/" + region + _PARAM.sub(lambda match: "{" + match.group(1) + "}", op.path)
        paths.setdefault(path, {})[op.method.lower()] = _operation(op, number)
    all_schemas = dict(schemas.get("$defs", {}))
    refine_bodies(all_schemas, region)
    all_schemas["Problem"] = _PROBLEM
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Partner Integration API (practiceflow sandbox)",
            "version": "v1",
            "description": "A local simulator of the Partner Integration API. Operations "
            "marked x-sandbox-guess have shapes the specification does not show. Its admin "
            "surface (accept a proposal, submit an eForm, arm faults, read the request and "
            "delivery logs) is not described here: GET /_admin (header X-Admin-Token) lists "
            "every admin route with an example, as does `practiceflow sandbox --help`.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": all_schemas,
            "securitySchemes": {
                "svcAuthId": {"type": "apiKey", "in": "header", "name": "X-SVC-Auth-ID"},
                "svcAuthKey": {"type": "apiKey", "in": "header", "name": "X-SVC-Auth-Key"},
                "basic": {"type": "http", "scheme": "basic"},
            },
        },
        "security": [{"svcAuthId": [], "svcAuthKey": []}, {"basic": []}],
    }
