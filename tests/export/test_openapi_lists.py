"""Every list operation of the OpenAPI and Power Automate exports pages as the spec says, with
typed rows; a client that knows only the exported document reaches the last page.

One table over every list module of the registry: the exported document passes
openapi-spec-validator (3.1 and 2.0), each paged list declares ``pageNumber`` (and ``pageSize``
unless the list's page size is fixed), each 2xx answer describes its rows, and a pager written
against the document alone (its parameters, its response schema) reads the same rows as the
runner's own paging, over more than one page where the sandbox holds more than one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV2SpecValidator, OpenAPIV31SpecValidator

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.engine import run_action
from practiceflow.export import generate
from practiceflow.export.powerautomate import operation_id
from practiceflow.manifest import default_registry, load_connector
from practiceflow.testing import SandboxHandle

REGISTRY = default_registry()
LISTS = sorted(key for key, action in REGISTRY.actions.items() if action.extensions.list)
PAGED = [key for key in LISTS if REGISTRY.actions[key].extensions.list.paged]  # type: ignore[union-attr]
FIXED = set(load_connector()["paging"]["fixed_size"])


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    files = generate("openapi")
    docs = {name: json.loads(text) for name, text in files.items() if name.endswith(".json")}
    validate(docs["openapi.json"], cls=OpenAPIV31SpecValidator)
    validate(docs["powerautomate/apiDefinition.swagger.json"], cls=OpenAPIV2SpecValidator)
    return docs


def _operation(document: dict[str, Any], op_id: str) -> tuple[str, str, dict[str, Any]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and operation.get("operationId") == op_id:
                return path, method, operation
    raise AssertionError(f"no operation {op_id!r} in the document")


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    for prefix, where in (("#/components/schemas/", ("components", "schemas")),
                          ("#/definitions/", ("definitions",))):  # fmt: skip
        if ref.startswith(prefix):
            node = document
            for part in where:
                node = node[part]
            return _resolve(document, node[ref.removeprefix(prefix)])
    return schema


def test_the_table_holds_every_list_module():
    assert len(LISTS) == 25
    assert {"find_clients", "find_bills", "list_users", "list_eform_templates"} <= set(PAGED)
    assert len(PAGED) == 9


@pytest.mark.parametrize("key", LISTS)
def test_openapi_list_operation_pages_and_types_its_rows(documents, key):
    document = documents["openapi.json"]
    path, _method, operation = _operation(document, key)
    params = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}
    if key in PAGED:
        number = params["pageNumber"]["schema"]
        assert (number["type"], number["minimum"], number["maximum"]) == ("integer", 1, 10000)
        if path in FIXED:
            assert "pageSize" not in params, f"{path} has a fixed page size (spec 4.1, 8)"
        else:
            size = params["pageSize"]["schema"]
            assert (size["minimum"], size["maximum"], size["default"]) == (1, 100, 50)
        assert "pageNumber" in operation["description"]
    else:
        assert "pageNumber" not in params
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    shapes = _resolve(document, answer)["anyOf"]
    kinds = {shape["type"]: shape for shape in shapes}
    row_ref = {"$ref": f"#/components/schemas/{key}_row"}
    assert kinds["array"]["items"] == row_ref
    envelope = kinds["object"]["properties"]
    assert envelope["items"]["items"] == row_ref
    assert envelope["hasMore"]["type"] == "boolean"
    row = _resolve(document, row_ref)
    assert row.get("properties") or key in NO_ROW_FIELDS, f"{key}: no field of a row is named"


#: Lists whose rows neither the spec, the module nor any module's choices name a field of.
NO_ROW_FIELDS = {
    "find_contacts", "find_proposals", "find_recurring_billings", "list_client_contacts",
    "list_fyi_job_states", "list_fyi_job_templates", "list_ledger_branding_themes",
    "list_onboarding_documents",
    "list_recurring_billing_runs", "list_webhook_events", "list_xpm_job_categories",
    "list_xpm_job_templates", "list_xpm_staff",
}  # fmt: skip


@pytest.mark.parametrize("key", LISTS)
def test_power_automate_list_operation_pages_and_types_its_rows(documents, key):
    swagger = documents["powerautomate/apiDefinition.swagger.json"]
    _path, _method, operation = _operation(swagger, operation_id(key))
    names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    assert ("pageNumber" in names) == (key in PAGED)
    assert "x-ms-pageable" not in operation  # it follows a next link the API never sends
    answer = _resolve(swagger, operation["responses"]["200"]["schema"])
    assert answer, f"{key}: the 2xx schema is empty"
    rows = answer["items"] if answer["type"] == "array" else answer["properties"]["items"]["items"]
    assert rows == {"$ref": f"#/definitions/{key}_row"}
    if answer["type"] == "object":
        assert answer["properties"]["hasMore"]["type"] == "boolean"
    # Rows are objects, or plain values (event keys) where the module says so.
    plain = key == "list_webhook_events"
    assert _resolve(swagger, rows)["type"] == ("string" if plain else "object")


def test_security_offers_one_scheme_with_both_credentials_first(documents):
    document = documents["openapi.json"]
    first = document["security"][0]
    schemes = document["components"]["securitySchemes"]
    assert list(first) == ["basic"]
    assert schemes["basic"]["scheme"] == "basic"
    assert {"clientId": [], "clientSecret": []} in document["security"]
    assert {schemes[name]["name"] for name in ("clientId", "clientSecret")} == {
        "X-SVC-Auth-ID",
        "X-SVC-Auth-Key",
    }


def _types_are_single(node: Any, at: str) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("type"), list):
            yield at
        for name, value in node.items():
            if name not in ("examples", "example", "enum", "default", "const"):
                yield from _types_are_single(value, f"{at}/{name}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _types_are_single(value, f"{at}/{index}")


def test_no_schema_of_the_openapi_document_has_a_list_of_types(documents):
    assert list(_types_are_single(documents["openapi.json"], "")) == []


# ---- a client that knows only the document ---------------------------------------------


def _read_every_page(
    document: dict[str, Any], key: str, base_url: str, auth: tuple[str, str], args: dict[str, Any]
) -> tuple[list[Any], int]:
    """Page one list operation the way its document says; returns the rows and pages read."""
    path, method, operation = _operation(document, key)
    params = {p["name"]: p for p in operation["parameters"]}
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    validator = Draft202012Validator({**answer, "components": document["components"]})
    rows: list[Any] = []
    first: int | None = None
    page = 1
    while True:
        query = {**args, "pageNumber": page}
        if "pageSize" in params:
            query["pageSize"] = params["pageSize"]["schema"]["default"]
        response = requests.request(method, base_url + path, params=query, auth=auth, timeout=30)
        assert response.status_code == 200, response.text[:300]
        data = response.json()
        errors = [error.message for error in validator.iter_errors(data)]
        assert errors == [], f"{key} page {page} does not fit the documented answer: {errors[:3]}"
        found = data if isinstance(data, list) else data["items"]
        more = None if isinstance(data, list) else data.get("hasMore")
        rows.extend(found)
        first = len(found) if first is None else first
        if not found or more is False or (more is None and len(found) < first):
            return rows, page
        page += 1


#: Input a list needs on the sandbox (both the pager and the runner get it).
ARGS = {"find_bills": {"startDate": "2000-01-01", "endDate": "2100-01-01"}}


@pytest.mark.parametrize("key", PAGED)
def test_a_client_of_the_document_alone_reads_every_row_the_runner_reads(
    documents, roomy_sandbox: SandboxHandle, tmp_path, key
):
    args = dict(ARGS.get(key, {}))
    if key == "find_proposals":
        counts: dict[str, int] = {}
        for row in roomy_sandbox.admin("GET", "/_admin/records/proposals"):
            counts[row["entityKey"]] = counts.get(row["entityKey"], 0) + 1
        args["entityKey"] = max(sorted(counts), key=lambda entity: counts[entity])
    auth = roomy_sandbox.credentials("anz", "rw")
    base_url = roomy_sandbox.base_url("anz")
    rows, pages = _read_every_page(documents["openapi.json"], key, base_url, auth, args)
    with Client(
        *auth,
        base_url=base_url,
        environ={},
        profiles_file=tmp_path / "none.toml",
        retry=RetryPolicy(max_attempts=1),
        limits=RateLimits(max_wait=0),
    ) as client:
        expected = run_action(key, {**args, "limit": 100000}, client).output["items"]
    assert len(rows) == len(expected) > 0
    assert sorted(map(json.dumps, rows)) == sorted(map(json.dumps, expected))
    if key in ("find_clients", "find_bills"):
        # The figures: 305 clients and 58 bills on the sandbox, over two pages or more.
        assert pages >= 2, f"{key}: {len(rows)} rows in {pages} page"


def test_schemathesis_cli_loads_the_document_and_its_examples_fit_the_sandbox(
    documents, roomy_sandbox: SandboxHandle, tmp_path
):
    """The CLI analyses every schema on load (a list of types inside anyOf used to crash it),
    then sends each operation's examples and checks each answer against its schema."""
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(documents["openapi.json"]), encoding="utf-8")
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    done = subprocess.run(  # noqa: S603 - fixed arguments, this interpreter's schemathesis
        [sys.executable, "-m", "schemathesis.cli", "run", str(spec),
         "--url", roomy_sandbox.base_url("anz"),
         "-H", f"X-SVC-Auth-ID: {client_id}", "-H", f"X-SVC-Auth-Key: {secret}",
         "--phases", "examples", "-c", "response_schema_conformance"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "Traceback" not in output
    assert " passed" in output


def test_dropdowns_read_the_rows_where_the_answer_holds_them(documents):
    swagger = documents["powerautomate/apiDefinition.swagger.json"]
    by_id = {op["operationId"]: op for _p, _m, op in _operations(swagger)}
    found = 0
    for at, node in _walk(swagger):
        dynamic = node.get("x-ms-dynamic-values")
        if not isinstance(dynamic, dict):
            continue
        answer = _resolve(swagger, by_id[dynamic["operationId"]]["responses"]["200"]["schema"])
        expected = "items" if answer["type"] == "object" else None
        assert dynamic.get("value-collection") == expected, at
        found += 1
    assert found >= 5


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "operationId" in operation:
                yield path, method, operation


def _walk(node: Any, at: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield at, node
        for name, value in node.items():
            yield from _walk(value, f"{at}/{name}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{at}/{index}")


def test_power_automate_keeps_nullable_fields_of_a_typed_row(documents):
    swagger = documents["powerautomate/apiDefinition.swagger.json"]
    email = swagger["definitions"]["find_clients_row"]["properties"]["email"]
    assert (email["type"], email["x-nullable"]) == ("string", True)
    assert "anyOf" not in email
