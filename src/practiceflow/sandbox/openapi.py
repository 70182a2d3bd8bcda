"""The OpenAPI 3.1 document of what the sandbox serves, built from the route table.

It describes the ``/api/v1`` routes under one region prefix (``/anz``), both security
schemes (the ``X-SVC-Auth-*`` header pair and HTTP Basic), the query parameters, the
request bodies (from the pydantic models) and problem-details errors. Operations whose
shapes the spec does not show carry ``x-sandbox-guess: true``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic.json_schema import models_json_schema

from practiceflow.sandbox.openapi_rules import refine_bodies
from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.sandbox.routes.common import Op, Param

_PARAM = re.compile(r"{(\w+)(?::(\w+))?}")
_PATH_TYPES = {
    "uuid": {"type": "string", "format": "uuid"},
    "int": {"type": "integer", "minimum": 0, "maximum": 2147483647},
    None: {"type": "string"},
    "str": {"type": "string"},
}
_PROBLEM = {
    "type": "object",
    "properties": {
        "type": {"type": ["string", "null"]},
        "title": {"type": ["string", "null"]},
        "status": {"type": ["integer", "null"]},
        "detail": {"type": ["string", "null"]},
        "instance": {"type": ["string", "null"]},
        "message": {"type": ["string", "null"]},
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
    schema: dict[str, Any] = {"type": param.type}
    if param.format:
        schema["format"] = param.format
    if param.minimum is not None:
        schema["minimum"] = param.minimum
    if param.maximum is not None:
        schema["maximum"] = param.maximum
    return {
        "name": param.name,
        "in": "query",
        "required": param.required,
        "description": param.description,
        "schema": schema,
    }


def _operation(op: Op, number: int) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": _PATH_TYPES[kind or None]}
        for name, kind in _PARAM.findall(op.path)
    ]
    parameters += [_query(param) for param in op.query]
    responses: dict[str, Any] = {}
    for status in (*op.statuses, 401, 429, 500):
        if status < 300:
            media: dict[str, Any] = {op.produces: {"schema": {}}}
            responses[str(status)] = {"description": _DESCRIPTIONS[status], "content": media}
        else:
            responses[str(status)] = {
                "description": _DESCRIPTIONS[status],
                "content": {"application/problem+json": {"schema": {"$ref": _PROBLEM_REF}}},
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


def build_openapi(region: str = "anz") -> dict[str, Any]:
    """Build the OpenAPI 3.1 document.

    Args:
        region: the region prefix the paths are described under.

    Returns:
        The document as a dict.
    """
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
