"""The sandbox's own /openapi.json: what it describes and the rules it states beyond the
body models (schemathesis runs against it in test_sandbox_schemathesis.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from practiceflow.sandbox.config import RateLimits
from practiceflow.sandbox.routes import ALL_OPS
from practiceflow.testing import SandboxHandle, running_sandbox

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def roomy_sandbox() -> Iterator[SandboxHandle]:
    """A sandbox whose rate limits do not get in the way of generated traffic."""
    with running_sandbox(
        rate_limits=RateLimits(10**6, 10**6, 10**6), webhook_retry_scale=0
    ) as handle:
        yield handle


def _document(sandbox: SandboxHandle) -> dict:
    session = requests.Session()
    session.trust_env = False
    return session.get(sandbox.url + "/openapi.json", timeout=10).json()


def test_document_describes_every_route_under_one_region_with_both_auth_schemes(
    roomy_sandbox: SandboxHandle,
) -> None:
    document = _document(roomy_sandbox)
    assert document["openapi"].startswith("3.1")
    schemes = document["components"]["securitySchemes"]
    assert schemes["basic"] == {"type": "http", "scheme": "basic"}
    assert {schemes["svcAuthId"]["name"], schemes["svcAuthKey"]["name"]} == {
        "X-SVC-Auth-ID",
        "X-SVC-Auth-Key",
    }
    operations = sum(len(item) for item in document["paths"].values())
    assert operations == len(ALL_OPS)
    assert all(path.startswith("/anz/api/v1/") for path in document["paths"])


def test_document_points_to_the_admin_surface_it_does_not_describe(
    roomy_sandbox: SandboxHandle,
) -> None:
    description = _document(roomy_sandbox)["info"]["description"]
    assert "GET /_admin" in description
    assert "practiceflow sandbox --help" in description
    listed = roomy_sandbox.admin("GET", "/_admin")  # the route it names answers
    assert any("/_admin/faults" in str(route) for route in listed["routes"])


def _body_schema(document: dict, name: str) -> dict:
    schema: dict = document["components"]["schemas"][name]
    return schema


RECIPIENT = {"name": "Ada", "email": "ada@example.invalid"}


@pytest.mark.parametrize(
    ("body", "path", "field", "base"),
    [
        ("EntityBody", "/api/v1/entities", "entityType", {"entityName": "Ada"}),
        ("LeadBody", "/api/v1/leads", "leadStatus", {"entityName": "Ada", "entityType": "IND"}),
        ("WebhookBody", "/api/v1/webhooks", "webhookEvent", {"hookUrl": "http://127.0.0.1:9/h"}),
        ("EformSendBody", "/api/v1/eforms/send", "templateId", {"recipient": RECIPIENT}),
    ],
)
def test_a_fixed_value_set_in_the_document_is_what_the_sandbox_accepts(
    roomy_sandbox: SandboxHandle, body: str, path: str, field: str, base: dict
) -> None:
    prop = _body_schema(_document(roomy_sandbox), body)["properties"][field]
    branch = next(item for item in prop.get("anyOf", [prop]) if item.get("type") != "null")
    session = requests.Session()
    session.trust_env = False
    client_id, secret = roomy_sandbox.credentials()
    session.headers.update({"X-SVC-Auth-ID": client_id, "X-SVC-Auth-Key": secret})
    url = roomy_sandbox.base_url() + path
    for value in branch["enum"]:  # every documented value is accepted
        answer = session.post(url, json={**base, field: value}, timeout=10)
        assert answer.status_code == 201, (value, answer.text)
    outside = 99 if branch.get("type") == "integer" else "not-in-the-list"
    answer = session.post(url, json={**base, field: outside}, timeout=10)
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith(f"{field}: got {outside!r}")


def test_the_document_states_the_either_or_rules_of_the_routes(
    roomy_sandbox: SandboxHandle,
) -> None:
    document = _document(roomy_sandbox)
    line = _body_schema(document, "BillLineBody")
    assert line["required"] == ["amount"]
    assert [alt["required"] for alt in line["anyOf"]] == [["taxAmount"], ["taxPercent"]]
    entity = _body_schema(document, "EntityBody")
    assert [alt["required"] for alt in entity["anyOf"]] == [["entityType"], ["entityTypeID"]]
    hook = _body_schema(document, "WebhookBody")
    assert [alt["required"] for alt in hook["anyOf"]] == [["hookUrl"], ["targetUrl"]]
    proposals = document["paths"]["/anz/api/v1/proposals/list"]["get"]["parameters"]
    assert next(p for p in proposals if p["name"] == "entityKey")["required"] is True
