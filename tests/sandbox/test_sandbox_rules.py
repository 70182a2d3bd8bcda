"""The sandbox holds callers to every rule the spec states: bad query values, required
parameters, body field types, the tax of a bill line; 405 names the allowed methods; a
client that hangs up mid-request is an INFO line, not an error."""

from __future__ import annotations

import logging
import re
import socket
import time
from typing import Any

import pytest
import requests

from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

ZERO_KEY = "00000000-0000-4000-8000-000000000000"
PROBLEM_FIELDS = {"type", "title", "status", "detail", "instance"}


def _bill(entity_key: str, line: dict[str, Any]) -> dict[str, Any]:
    return {"entityKey": entity_key, "billDate": "2025-05-01", "lineItems": [line]}


def _first_active(api) -> dict[str, Any]:
    return next(row for row in api.get("/api/v1/entities").json() if row["status"] == "Active")


# (method, path, query, body, words the detail must name)
REFUSED: list[tuple[str, str, dict[str, str] | None, Any, str]] = [
    ("GET", "/api/v1/entities", {"lastUpdated": ""}, None, "lastUpdated: got ''"),
    ("GET", "/api/v1/entities", {"pageNumber": ""}, None, "pageNumber: got ''"),
    ("GET", "/api/v1/users/list", {"pageNumber": ""}, None, "pageNumber: got ''"),
    ("GET", "/api/v1/groups/list", {"isActive": ""}, None, "isActive: got ''"),
    ("GET", "/api/v1/groups/list", {"lastUpdated": ""}, None, "lastUpdated: got ''"),
    ("GET", "/api/v1/leads", {"pageSize": ""}, None, "pageSize: got ''"),
    ("GET", "/api/v1/contacts/list", {"lastUpdated": ""}, None, "lastUpdated: got ''"),
    ("GET", "/api/v1/bills/list", {"startDate": ""}, None, "startDate: got ''"),
    ("GET", "/api/v1/bills/list", {"endDate": ""}, None, "endDate: got ''"),
    ("GET", "/api/v1/bills/list", {"startDate": "20250501"}, None, "expected a date YYYY-MM-DD"),
    ("GET", "/api/v1/bills/list", {"endDate": "2025-W18-1"}, None, "expected a date YYYY-MM-DD"),
    ("GET", "/api/v1/proposals/list", None, None, "entityKey is required"),
    ("GET", "/api/v1/proposals/list", {"entityKey": ""}, None, "entityKey: got ''"),
    ("GET", "/api/v1/proposals/list", {"entityKey": "nope"}, None, "expected a uuid"),
    ("POST", "/api/v1/entities", None, {"entityName": "A", "entityType": "IND", "telephone": 612},
     "telephone"),
    ("POST", "/api/v1/entities", None, {"entityName": "A", "entityType": "IND", "mobile": 4.5},
     "mobile"),
    ("POST", "/api/v1/entities", None, {"entityName": "A", "entityType": "IND", "clientStatus": ""},
     "clientStatus: got ''"),
    ("POST", "/api/v1/leads", None, {"entityName": "A", "entityType": "IND", "leadStatus": ""},
     "leadStatus: got ''"),
    ("POST", "/api/v1/leads", None, {"entityName": "A", "entityType": "IND", "leadSource": ""},
     "leadSource: got ''"),
    ("POST", "/api/v1/webhooks", None,
     {"hookUrl": "", "targetUrl": "http://127.0.0.1:9/h", "webhookEvent": "lead.created"},
     "hookUrl: got ''"),
    ("POST", "/api/v1/eforms/send", None,
     {"templateId": 101, "recipient": {"name": "Ada", "email": "a@b.c"}, "mute": 1}, "mute"),
    ("POST", "/api/v1/bills", None, "ACTIVE_BILL:extTaxID", "taxAmount or taxPercent"),
    ("POST", "/api/v1/bills", None, "ACTIVE_BILL:bare", "taxAmount or taxPercent"),
    ("POST", "/api/v1/bills", None, {"entityKey": ZERO_KEY, "billDate": "", "lineItems": [{}]},
     "billDate"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "query", "body", "words"),
    REFUSED,
    ids=[f"{m} {p} {q or ''}{'' if b is None else str(b)[:30]}" for m, p, q, b, _ in REFUSED],
)
def test_a_value_the_spec_does_not_allow_is_a_400_problem(
    api, method: str, path: str, query: dict[str, str] | None, body: Any, words: str
) -> None:
    if isinstance(body, str):  # a bill for a real Active client, its one line as named
        active = _first_active(api)
        line = {"amount": 100, "extTaxID": 300} if body.endswith("extTaxID") else {"amount": 100}
        body = _bill(active["entityKey"], line)
    response = api.request(method, path, params=query, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert set(problem) >= PROBLEM_FIELDS
    assert problem["status"] == 400
    assert problem["instance"] == "/anz" + path
    assert words in problem["detail"]


def test_a_bill_line_with_ext_tax_id_and_no_tax_is_refused_with_a_connected_ledger_too(
    sandbox: SandboxHandle, api
) -> None:
    sandbox.admin("POST", "/_admin/config", {"ledgerConnected": True})
    active = _first_active(api)
    stored = len(sandbox.admin("GET", "/_admin/records/bills"))
    line = {"amount": 100, "extAccountID": 200, "extTaxID": 300}
    response = api.post("/api/v1/bills", _bill(active["entityKey"], line))
    assert response.status_code == 400
    assert "lineItems[0]: taxAmount or taxPercent is required" in response.json()["detail"]
    assert len(sandbox.admin("GET", "/_admin/records/bills")) == stored  # nothing created
    line["taxPercent"] = 10
    assert api.post("/api/v1/bills", _bill(active["entityKey"], line)).status_code == 201


def test_a_write_without_a_body_is_400_except_a_renew_whose_body_is_optional(
    sandbox: SandboxHandle, api
) -> None:
    contact = sandbox.admin("GET", "/_admin/records/contacts")[0]
    path = f"/api/v1/entities/{contact['entityKey']}/contacts/{contact['contactKey']}"
    missing = api.request("PUT", path)
    assert missing.status_code == 400
    assert missing.json()["detail"] == "body: missing; expected a JSON object"
    assert api.request("PUT", path, json={}).status_code == 200  # an empty object is a body
    proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
    renewed = api.request("POST", f"/api/v1/proposals/{proposal['proposalKey']}/renew")
    assert renewed.status_code == 201


def test_an_onboarding_job_for_an_unknown_user_is_404_and_creates_nothing(
    sandbox: SandboxHandle, api
) -> None:
    body = {
        "userKey": ZERO_KEY,
        "recipient": {"name": "Ada", "email": "ada@example.invalid"},
        "clients": [{"entityType": "IND", "entityName": "Ada"}],
    }
    stored = len(sandbox.admin("GET", "/_admin/records/onboardings"))
    response = api.post("/api/v1/onboardings/create", body)
    assert response.status_code == 404
    assert response.json()["detail"] == f"userKey: got {ZERO_KEY}; no such user in this practice"
    assert len(sandbox.admin("GET", "/_admin/records/onboardings")) == stored


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"entityKey": ZERO_KEY}, 200),  # a client with no proposals: an empty page
        ({}, 200),
        ({"entityKey": ""}, 400),  # still not a uuid
    ],
)
def test_variant_proposals_filter_optional_lists_every_proposal(
    sandbox: SandboxHandle, api, query: dict[str, str], status: int
) -> None:
    sandbox.admin("POST", "/_admin/variants", {"set": {"proposals_filter": "optional"}})
    response = api.get("/api/v1/proposals/list", params={**query, "pageSize": 100})
    assert response.status_code == status, response.text
    if status == 200 and not query:
        stored = sandbox.admin("GET", "/_admin/records/proposals")
        assert response.json()["totalCount"] == len(stored) > 0
    elif status == 200:
        assert response.json()["items"] == []


@pytest.mark.parametrize(
    ("answer", "query", "status"),
    [
        ("optional", {}, 200),
        ("optional", {"startDate": "2025-01-01"}, 200),
        ("required", {"startDate": "2025-01-01"}, 400),
        ("required", {"endDate": "2025-01-01"}, 400),
        ("required", {"startDate": "2025-01-01", "endDate": "2025-12-31"}, 200),
    ],
)
def test_variant_bill_range(
    sandbox: SandboxHandle, api, answer: str, query: dict[str, str], status: int
) -> None:
    sandbox.admin("POST", "/_admin/variants", {"set": {"bill_range": answer}})
    response = api.get("/api/v1/bills/list", params=query)
    assert response.status_code == status, response.text
    if status == 400:
        missing = "endDate" if "startDate" in query else "startDate"
        assert response.json()["detail"].startswith(f"{missing} is required")


# ---- 405 and Allow -----------------------------------------------------------------------


def _concrete(path: str) -> str:
    """A document path with plausible values in its parameters (the route must match)."""
    path = re.sub(r"{(?:key|entityKey|id|contactKey)}", ZERO_KEY, path)
    return re.sub(r"{\w+}", "1", path)


def test_every_path_answers_an_unlisted_method_405_with_allow_naming_its_methods(
    sandbox: SandboxHandle, api
) -> None:
    session = requests.Session()
    session.trust_env = False
    document = session.get(sandbox.url + "/openapi.json", timeout=10).json()
    for path, item in document["paths"].items():
        listed = {method.upper() for method in item}
        response = api.request("TRACE", _concrete(path.removeprefix("/anz")))
        assert response.status_code == 405, (path, response.text)
        assert response.json()["title"] == "Method Not Allowed"
        allowed = {method.strip() for method in response.headers["Allow"].split(",")}
        assert allowed - {"HEAD"} == listed, path
        assert ("HEAD" in allowed) is ("GET" in listed), path


@pytest.mark.parametrize(
    ("path", "method", "allow"),
    [
        ("/_admin/faults", "PUT", "DELETE, GET, HEAD, POST"),
        ("/_admin/reset", "GET", "POST"),
        ("/_admin/entities/abc", "POST", "PATCH"),
    ],
)
def test_the_admin_surface_answers_405_with_allow(
    sandbox: SandboxHandle, path: str, method: str, allow: str
) -> None:
    response = requests.request(
        method, sandbox.url + path, headers={"X-Admin-Token": sandbox.admin_token}, timeout=10
    )
    assert response.status_code == 405
    assert response.headers["Allow"] == allow


# ---- a client that hangs up ----------------------------------------------------------------


def _hang_up(sandbox: SandboxHandle, raw: bytes) -> None:
    with socket.create_connection((sandbox.host, sandbox.port), timeout=10) as conn:
        conn.sendall(raw)


def _wait_for_request_row(sandbox: SandboxHandle, count: int) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while len(sandbox.state.request_log()) < count:
        assert time.monotonic() < deadline, "the sandbox never logged the request"
        time.sleep(0.01)
    row: dict[str, Any] = sandbox.state.request_log()[-1]
    return row


@pytest.fixture
def every_log_record(caplog: pytest.LogCaptureFixture):
    """Records of every logger, uvicorn's own (which do not reach the root) included."""
    caplog.set_level(logging.DEBUG, logger="practiceflow")
    uvicorn = logging.getLogger("uvicorn")
    uvicorn.addHandler(caplog.handler)
    yield caplog
    uvicorn.removeHandler(caplog.handler)


def test_a_client_that_hangs_up_mid_body_is_one_info_line(
    sandbox: SandboxHandle, every_log_record: pytest.LogCaptureFixture
) -> None:
    client_id, secret = sandbox.credentials()
    head = (
        "POST /anz/api/v1/entities HTTP/1.1\r\n"
        f"Host: {sandbox.host}\r\n"
        f"X-SVC-Auth-ID: {client_id}\r\nX-SVC-Auth-Key: {secret}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    )
    before = len(sandbox.state.request_log())
    _hang_up(sandbox, head.encode() + b'{"entityName": "Half')
    row = _wait_for_request_row(sandbox, before + 1)
    assert (row["method"], row["path"], row["status"]) == ("POST", "/api/v1/entities", None)
    records = every_log_record.records
    lines = [r for r in records if "disconnected" in r.getMessage()]
    assert [(r.levelno, r.name) for r in lines] == [(logging.INFO, "practiceflow.sandbox.app")]
    assert lines[0].getMessage() == (
        "POST /anz/api/v1/entities: the client disconnected before its request was read"
    )
    assert secret not in lines[0].getMessage()
    assert not [r for r in records if r.levelno >= logging.WARNING or r.exc_info]
    assert not any(row["entityName"] == "Half" for row in sandbox.admin("GET", "records/entities"))


def test_a_client_that_hangs_up_mid_headers_logs_nothing_above_info(
    sandbox: SandboxHandle, api, every_log_record: pytest.LogCaptureFixture
) -> None:
    _hang_up(sandbox, b"GET /anz/api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-SVC-Au")
    assert api.get("/api/v1/auth/validate").status_code == 200  # the sandbox still serves
    records = every_log_record.records
    assert not [r for r in records if r.levelno >= logging.WARNING or r.exc_info]
