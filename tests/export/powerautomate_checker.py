"""A checker for Power Automate custom-connector folders (used by test_powerautomate.py).

The rules are our own excerpt of Microsoft's published custom-connector schemas and
certification requirements: the per-file rules live as JSON Schema in
``powerautomate/rules.json``; the rules a schema cannot say (references between
operations, the webhook trigger's contract, the icon, the README's sections) are below.
Each finding has a severity: ``blocker`` (the folder cannot be imported or submitted),
``error`` (a rule is broken) or ``warning``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

RULES = json.loads((Path(__file__).parent / "powerautomate" / "rules.json").read_text())
FILES = ("apiDefinition.swagger.json", "apiProperties.json", "icon.png", "README.md")
README_SECTIONS = (
    "## Publisher:",
    "## Prerequisites",
    "## Supported Operations",
    "## Obtaining Credentials",
    "## Known Issues and Limitations",
    "## Deployment Instructions",
)
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Finding:
    severity: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}"


def _validator(name: str) -> Draft202012Validator:
    schema = {**RULES, "$ref": f"#/$defs/{name}"}
    return Draft202012Validator(schema)


def _schema_findings(name: str, document: Any, file: str) -> Iterator[Finding]:
    for error in _validator(name).iter_errors(document):
        where = file + ":" + "/".join(str(part) for part in error.absolute_path)
        yield Finding("error", where, error.message[:300])


def _operations(swagger: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in swagger.get("paths", {}).items():
        for method in METHODS:
            if isinstance(item.get(method), dict):
                yield path, method, item[method]


def _walk(node: Any, at: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield at, node
        for key, value in node.items():
            yield from _walk(value, f"{at}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{at}/{index}")


def _swagger_findings(swagger: Mapping[str, Any]) -> Iterator[Finding]:
    file = "apiDefinition.swagger.json"
    yield from _schema_findings("swagger", swagger, file)
    ids = [operation.get("operationId") for _p, _m, operation in _operations(swagger)]
    for name in sorted({i for i in ids if ids.count(i) > 1}):
        yield Finding("error", file, f"operationId {name!r} is used more than once")
    known = set(ids)
    for at, node in _walk(swagger, file):
        for keyword in ("x-ms-dynamic-values", "x-ms-dynamic-list"):
            target = node.get(keyword)
            if isinstance(target, dict) and target.get("operationId") not in known:
                yield Finding(
                    "error", at, f"{keyword} names no operation: {target.get('operationId')!r}"
                )
    for name, definition in swagger.get("definitions", {}).items():
        for at, node in _walk(definition, f"{file}:definitions/{name}"):
            for prop, sub in (node.get("properties") or {}).items():
                if isinstance(sub, dict) and "$ref" not in sub and "x-ms-summary" not in sub:
                    yield Finding("error", f"{at}/properties/{prop}", "no x-ms-summary")
    triggers = [(p, m, o) for p, m, o in _operations(swagger) if "x-ms-trigger" in o]
    for path, _method, operation in triggers:
        where = f"{file}:paths/{path}"
        if "x-ms-notification-content" not in swagger["paths"][path]:
            yield Finding("error", where, "webhook trigger without x-ms-notification-content")
        urls = [
            at
            for parameter in operation.get("parameters", [])
            for at, node in _walk(parameter, "")
            if node.get("x-ms-notification-url") is True
        ]
        if not urls:
            yield Finding(
                "blocker", where, "webhook trigger without an x-ms-notification-url field"
            )
        created = operation.get("responses", {}).get("201") or {}
        if "Location" not in (created.get("headers") or {}):
            yield Finding(
                "error", where, "webhook trigger's 201 declares no Location (no way to unsubscribe)"
            )


def _png_size(data: bytes) -> tuple[int, int] | None:
    if not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _properties_findings(
    properties: Mapping[str, Any], swagger: Mapping[str, Any]
) -> Iterator[Finding]:
    file = "apiProperties.json"
    yield from _schema_findings("apiProperties", properties, file)
    body = properties.get("properties", {})
    params = body.get("connectionParameters", {})
    kinds = {scheme.get("type") for scheme in swagger.get("securityDefinitions", {}).values()}
    if "basic" in kinds:
        for name in ("username", "password"):
            if params.get(name, {}).get("type") != "securestring":
                yield Finding(
                    "error", file, f"basic auth needs the securestring parameter {name!r}"
                )
    hosts = [
        policy
        for policy in body.get("policyTemplateInstances", [])
        if str(policy.get("templateId", "")).lower() == "dynamichosturl"
    ]
    if not hosts:
        yield Finding("error", file, "no dynamichosturl policy: calls would go to the swagger host")
    for policy in hosts:
        template = str(
            policy.get("parameters", {}).get("x-ms-apimTemplateParameter.urlTemplate", "")
        )
        named = template.split("@connectionParameters('")[1:]
        for part in named:
            name = part.split("'", 1)[0]
            if name not in params:
                yield Finding("error", file, f"urlTemplate reads an undeclared parameter {name!r}")
        if not template.startswith("https://") or not named:
            yield Finding("error", file, f"urlTemplate {template!r} is not https:// + a parameter")


def check(folder: Path) -> list[Finding]:
    """Check one connector folder.

    Args:
        folder: holds apiDefinition.swagger.json, apiProperties.json, icon.png, README.md.

    Returns:
        Every finding, blockers first.
    """
    findings = [
        Finding("blocker", name, "missing") for name in FILES if not (folder / name).is_file()
    ]
    if findings:
        return findings
    swagger = json.loads((folder / FILES[0]).read_text(encoding="utf-8"))
    properties = json.loads((folder / FILES[1]).read_text(encoding="utf-8"))
    findings += _swagger_findings(swagger)
    findings += _properties_findings(properties, swagger)
    icon = (folder / "icon.png").read_bytes()
    size = _png_size(icon)
    if size is None:
        findings.append(Finding("blocker", "icon.png", "not a PNG"))
    elif size[0] != size[1] or not 100 <= size[0] <= 512 or len(icon) > 1024 * 1024:
        findings.append(
            Finding(
                "error",
                "icon.png",
                f"{size} {len(icon)} bytes: want a square of 100-512 px under 1 MB",
            )
        )
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for section in README_SECTIONS:
        if section not in readme:
            findings.append(Finding("error", "README.md", f"no section {section!r}"))
    order = {"blocker": 0, "error": 1, "warning": 2}
    return sorted(findings, key=lambda finding: order[finding.severity])
