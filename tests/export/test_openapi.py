"""Proofs of the OpenAPI export: both documents pass openapi-spec-validator, and schemathesis
runs the 3.1 document against the sandbox without finding a schema mismatch."""

from __future__ import annotations

import json
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import validate
from openapi_spec_validator.validation import OpenAPIV2SpecValidator, OpenAPIV31SpecValidator
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from practiceflow.export import generate
from practiceflow.testing import SandboxHandle

#: Examples per operation: enough to hit each operation's shapes, bounded for time.
EXAMPLES = 4


@pytest.fixture(scope="module")
def documents() -> dict[str, Any]:
    files = generate("openapi")
    return {name: json.loads(text) for name, text in files.items() if name.endswith(".json")}


def test_openapi_31_document_passes_the_spec_validator(documents):
    validate(documents["openapi.json"], cls=OpenAPIV31SpecValidator)


def test_power_automate_document_passes_the_spec_validator(documents):
    validate(documents["powerautomate/apiDefinition.swagger.json"], cls=OpenAPIV2SpecValidator)


def test_power_automate_trigger_carries_the_notification_url(documents):
    swagger = documents["powerautomate/apiDefinition.swagger.json"]
    trigger = swagger["paths"]["/api/v1/webhooks"]["post"]
    assert trigger["x-ms-trigger"] == "single"
    body = trigger["parameters"][0]["schema"]["properties"]
    assert body["hookUrl"]["x-ms-notification-url"] is True
    assert "proposal.accepted" in body["webhookEvent"]["enum"]


def test_every_operation_documents_problem_details(documents):
    for methods in documents["openapi.json"]["paths"].values():
        for operation in methods.values():
            for code in ("401", "429", "500"):
                content = operation["responses"][code]["content"]
                assert content["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"
                }


def test_schemathesis_finds_no_schema_mismatch_against_the_sandbox(
    documents, roomy_sandbox: SandboxHandle
):
    schema = schemathesis.openapi.from_dict(documents["openapi.json"])
    client_id, secret = roomy_sandbox.credentials("anz", "rw")
    auth = {"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret}
    base_url = roomy_sandbox.base_url("anz")
    checks = [response_schema_conformance, status_code_conformance, content_type_conformance]
    ran: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def check(case: Any) -> None:
            response = case.call(base_url=base_url, headers=auth)
            case.validate_response(response, checks=checks)

        check()
        ran.append(operation.label)
    assert len(ran) == sum(len(methods) for methods in documents["openapi.json"]["paths"].values())
