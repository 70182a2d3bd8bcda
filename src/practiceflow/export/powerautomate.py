"""The ``openapi`` exporter: ``openapi.json`` plus a Power Automate custom connector folder.

``powerautomate/`` holds what Microsoft's tooling imports and certification asks for: the
swagger (OpenAPI 2.0 lowered from the 3.1 document, with ``x-ms-*`` annotations, Basic auth and
one webhook trigger), ``apiProperties.json``, the icon and the README (connectors/README.md).
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Mapping
from typing import Any

from practiceflow.export.exporter import dump_json, template_text
from practiceflow.export.openapi import ENVELOPE_ITEMS, list_shape, openapi_document
from practiceflow.manifest.module_registry import ModuleRegistry

#: The connector's title (Power Automate: at most 30 characters, no "API").
TITLE = "Practiceflow"
#: Brand colour of the icon and the connector card (not #007ee5 or #ffffff).
BRAND_COLOR = "#1b5e7a"
#: Where the swagger's host points before a connection sets the real regional host.
PLACEHOLDER_HOST = "regional-host.example.com"
#: Publisher metadata; replace the addresses with your own before certification.
METADATA = {
    "Website": "https://practiceflow.example.com",
    "Privacy policy": "https://practiceflow.example.com/privacy",
    "Categories": "Business Management;Finance",
}
DESCRIPTION = (
    "Clients, leads, bills, proposals, eForms and onboarding jobs of a practice-management "
    "platform: create and find records, download documents, and start flows on its events."
)


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def icon_png(size: int = 230) -> bytes:
    """The connector icon: a white document mark on the brand colour, as PNG bytes."""
    red, green, blue = (int(BRAND_COLOR[i : i + 2], 16) for i in (1, 3, 5))
    background = bytes((red, green, blue))
    white = b"\xff\xff\xff"
    left, right, top, bottom = (size * percent // 100 for percent in (30, 70, 22, 78))
    rows = []
    for y in range(size):
        row = bytearray(b"\x00")  # filter: none
        for x in range(size):
            inside = left <= x < right and top <= y < bottom
            ruled = (y - top) % (size // 10) in (0, 1) and y > top + size // 10 and x < right - 6
            row += white if inside and not ruled else background
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    data = zlib.compress(b"".join(rows), 9)
    chunks = _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + chunks


def readme(swagger: Mapping[str, Any]) -> str:
    """The connector's README (the sections Microsoft's certification asks for)."""
    actions: list[str] = []
    triggers: list[str] = []
    for methods in swagger["paths"].values():
        for operation in methods.values():
            if not isinstance(operation, Mapping) or "operationId" not in operation:
                continue
            if operation.get("x-ms-visibility") == "internal":
                continue
            line = f"### {operation['summary']}\n{operation['description']}\n"
            (triggers if "x-ms-trigger" in operation else actions).append(line)
    skipped = swagger["info"].get("x-practiceflow-skipped", {})
    limits = "".join(f"- `{name}`: {reason}\n" for name, reason in sorted(skipped.items()))
    return template_text("powerautomate", "README.md.in").format(
        title=TITLE,
        description=DESCRIPTION,
        triggers="\n".join(triggers),
        actions="\n".join(sorted(actions)),
        host=PLACEHOLDER_HOST,
        limits=limits,
    )


_V2_DROP = frozenset(
    {"anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "const", "examples",
     "$comment", "$defs", "writeOnly", "deprecated", "exclusiveMinimum", "exclusiveMaximum",
     "minProperties", "maxProperties", "x-pii", "x-choices", "title"}
)  # fmt: skip


def operation_id(key: str) -> str:
    """A module key as a PascalCase operationId (``create_client`` -> ``CreateClient``)."""
    return "".join(part[:1].upper() + part[1:] for part in key.split("_") if part)


def _summary(name: str, schema: Mapping[str, Any]) -> str:
    title = schema.get("title")
    if isinstance(title, str) and title:
        return title
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    return " ".join(words)[:1].upper() + " ".join(words)[1:]


class _Lowering:
    """JSON Schema 2020-12 -> the OpenAPI 2.0 subset, with Power Automate's annotations."""

    def __init__(self, lists: Mapping[str, str], enveloped: frozenset[str]) -> None:
        self.lists = lists  # list action key -> its operationId
        self.enveloped = enveloped  # list actions whose answer is described as {items, ...}

    def dynamic(self, declared: Any) -> dict[str, Any] | None:
        """``x-ms-dynamic-values`` for an ``x-choices`` declaration (rows must be objects)."""
        if not isinstance(declared, Mapping) or declared.get("action") not in self.lists:
            return None
        value = declared.get("value")
        if not value:
            return None  # plain values: Power Automate's lists need objects
        out: dict[str, Any] = {
            "operationId": self.lists[declared["action"]],
            "value-path": value,
            "value-title": declared.get("label") or value,
        }
        if declared.get("collection"):
            out["value-collection"] = declared["collection"]
        elif declared["action"] in self.enveloped:
            out["value-collection"] = ENVELOPE_ITEMS
        if declared.get("with"):
            out["parameters"] = dict(declared["with"])
        return out

    def schema(self, schema: Any) -> Any:
        """Lower one schema (recursively)."""
        if not isinstance(schema, Mapping):
            return schema
        if "$ref" in schema:
            return {"$ref": str(schema["$ref"]).replace("#/components/schemas/", "#/definitions/")}
        schema = _one_shape(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "type" and isinstance(value, list):
                kinds = [kind for kind in value if kind != "null"]
                out["type"] = kinds[0] if kinds else "string"
                if "null" in value:
                    out["x-nullable"] = True
            elif key == "properties":
                out[key] = {name: self.field(name, sub) for name, sub in value.items()}
            elif key in ("items", "additionalProperties"):
                out[key] = self.schema(value)
            elif key == "allOf":
                out[key] = [self.schema(sub) for sub in value]
            elif key not in _V2_DROP:
                out[key] = value
        if "const" in schema:
            out["enum"] = [schema["const"]]
        if schema.get("examples") and not isinstance(schema["examples"][0], dict | list):
            out["x-ms-test-value"] = schema["examples"][0]
        for bound, flag in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if bound in schema:
                out[flag] = schema[bound]
                out[bound] = True
        dynamic = self.dynamic(schema.get("x-choices"))
        if dynamic is not None:
            out["x-ms-dynamic-values"] = dynamic
        return out

    def field(self, name: str, schema: Any) -> Any:
        """A property: lowered, with ``x-ms-summary`` and a description."""
        lowered = self.schema(schema)
        if not isinstance(lowered, dict) or "$ref" in lowered:
            return lowered
        summary = _summary(name, schema if isinstance(schema, Mapping) else {})
        lowered.setdefault("x-ms-summary", summary)
        lowered.setdefault("description", f"{summary}.")
        return lowered


def _one_shape(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """OpenAPI 2.0 has no ``anyOf``: one of bare types becomes a list of types, one of shapes
    (each a ``type`` or a ``$ref``) its first, the likely one; any other is dropped later."""
    branches = schema.get("anyOf")
    if not isinstance(branches, list) or not branches:
        return schema
    if not all(isinstance(branch, Mapping) for branch in branches):
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    if all(set(branch) == {"type"} and isinstance(branch["type"], str) for branch in branches):
        return rest | {"type": [branch["type"] for branch in branches]}
    if all("type" in branch or "$ref" in branch for branch in branches):
        first = branches[0]
        return {**first, **rest} if "$ref" not in first else first
    return schema


def _parameter(lowering: _Lowering, parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema = parameter.get("schema") or {}
    out: dict[str, Any] = {
        key: value for key, value in parameter.items() if key not in ("schema", "description")
    }
    lowered = lowering.schema(schema)
    lowered.pop("x-nullable", None)
    out.update(lowered)
    out["x-ms-summary"] = _summary(parameter["name"], schema)
    out["description"] = str(parameter.get("description") or f"{out['x-ms-summary']}.")
    if parameter["in"] == "path":
        out["x-ms-url-encoding"] = "single"
    return out


def _operation(
    lowering: _Lowering, operation: Mapping[str, Any], important: bool
) -> dict[str, Any]:
    description = str(operation["description"])
    out: dict[str, Any] = {
        "operationId": operation_id(str(operation["operationId"])),
        "summary": str(operation["summary"]).rstrip("."),
        "description": description if description.endswith(".") else description + ".",
        "tags": operation["tags"],
        "x-ms-visibility": "important" if important else "advanced",
    }
    parameters = [_parameter(lowering, parameter) for parameter in operation.get("parameters", [])]
    body = operation.get("requestBody")
    if body:
        schema = body["content"]["application/json"]["schema"]
        parameters.append(
            {
                "name": "body",
                "in": "body",
                "required": True,
                "description": "The fields to send.",
                "x-ms-summary": "Body",
                "schema": lowering.schema(schema),
            }
        )
    if parameters:
        out["parameters"] = parameters
    responses = {}
    produces: set[str] = set()
    for code, response in operation["responses"].items():
        lowered: dict[str, Any] = {"description": response["description"]}
        for media, content in response.get("content", {}).items():
            lowered["schema"] = lowering.schema(content["schema"])
            if code.startswith("2"):
                produces.add(media)
        for name, header in response.get("headers", {}).items():
            lowered.setdefault("headers", {})[name] = {
                "type": "string",
                "description": header["description"],
                "x-ms-summary": name,
            }
        responses[code] = lowered
    out["responses"] = responses
    if produces and produces != {"application/json"}:
        out["produces"] = sorted(produces)
    return out


def swagger_document(modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, Any]:
    """The Power Automate custom-connector definition (OpenAPI 2.0)."""
    source = openapi_document(modules, connector)
    lists = {
        str(operation["operationId"]): operation_id(str(operation["operationId"]))
        for methods in source["paths"].values()
        for operation in methods.values()
        if modules.actions[str(operation["operationId"])].extensions.list is not None
    }
    enveloped = frozenset(
        key
        for key in lists
        if (shape := list_shape(modules.actions[key], connector)) and shape.shape == "envelope"
    )
    lowering = _Lowering(lists, enveloped)
    skipped = dict(source["info"]["x-practiceflow-skipped"])
    hooks = connector["webhooks"]["subscribe"]
    paths: dict[str, dict[str, Any]] = {}
    for path, methods in source["paths"].items():
        for method, operation in methods.items():
            key = str(operation["operationId"])
            if path == hooks["path"] and method == "post":
                # The trigger subscribes on this route; a flow never calls it as an action.
                skipped[f"actions/{key}"] = (
                    "its route is the webhook trigger's subscription in Power Automate "
                    "(When an Event Occurs)"
                )
                continue
            action = modules.actions[key]
            important = action.kind == "create" or action.needs_write
            paths.setdefault(path, {})[method] = _operation(lowering, operation, important)
    events = sorted(
        {
            (trigger.webhook["event"], trigger.title)
            for trigger in modules.triggers.values()
            if trigger.webhook and isinstance(trigger.webhook["event"], str)
        }
    )
    if events:
        paths.setdefault(hooks["path"], {}).update(_trigger_path(hooks, events))
        delete = paths.setdefault(hooks["path"] + "/{id}", {})
        if "delete" in delete:
            delete["delete"]["x-ms-visibility"] = "internal"
    info = {
        "title": TITLE,
        "version": source["info"]["version"],
        "description": DESCRIPTION,
        "contact": {"name": "practiceflow", "url": METADATA["Website"]},
        "x-practiceflow-skipped": dict(sorted(skipped.items())),
    }
    return {
        "swagger": "2.0",
        "info": info,
        "host": PLACEHOLDER_HOST,
        "basePath": "/",
        "schemes": ["https"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "securityDefinitions": {"basic_auth": {"type": "basic"}},
        "security": [{"basic_auth": []}],
        "paths": dict(sorted(paths.items())),
        "definitions": {
            name: lowering.schema(schema)
            for name, schema in source["components"]["schemas"].items()
        },
        "x-ms-connector-metadata": [
            {"propertyName": name, "propertyValue": value} for name, value in METADATA.items()
        ],
    }


def _trigger_path(hooks: Mapping[str, Any], events: list[tuple[str, str]]) -> dict[str, Any]:
    """The webhook trigger's path item: its template with the manifest's field names and events."""
    item: dict[str, Any] = json.loads(template_text("powerautomate", "webhookTrigger.json"))
    schema = item["post"]["parameters"][0]["schema"]
    names = {f"{part.upper()}_FIELD": hooks[f"{part}_field"] for part in ("url", "event", "name")}
    schema["required"] = [names[field] for field in schema["required"]]
    schema["properties"] = {names[field]: sub for field, sub in schema["properties"].items()}
    event = schema["properties"][hooks["event_field"]]
    event["enum"] = [key for key, _ in events]
    event["x-ms-enum-values"] = [{"value": key, "displayName": title} for key, title in events]
    return item


def api_properties(connector: Mapping[str, Any]) -> dict[str, Any]:
    """``apiProperties.json``: its template with the brand colour and the regions filled in."""
    document: dict[str, Any] = json.loads(template_text("powerautomate", "apiProperties.json"))
    properties = document["properties"]
    properties["iconBrandColor"] = BRAND_COLOR
    constraints = properties["connectionParameters"]["region"]["uiDefinition"]["constraints"]
    regions = sorted(connector["regions"].items())
    constraints["allowedValues"] = [{"text": r["title"], "value": key} for key, r in regions]
    return document


def openapi_files(modules: ModuleRegistry, connector: Mapping[str, Any]) -> dict[str, str | bytes]:
    """``openapi.json`` (OpenAPI 3.1 of the actions) and the ``powerautomate/`` folder."""
    swagger = swagger_document(modules, connector)
    return {
        "openapi.json": dump_json(openapi_document(modules, connector)),
        "powerautomate/apiDefinition.swagger.json": dump_json(swagger),
        "powerautomate/apiProperties.json": dump_json(api_properties(connector)),
        "powerautomate/icon.png": icon_png(),
        "powerautomate/README.md": readme(swagger),
    }
