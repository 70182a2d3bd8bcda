"""create_lead: POST /api/v1/leads (spec 2.3); source and status by NAME, checked first."""

from __future__ import annotations

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.engine import run_action
from practiceflow.errors import (
    AuthError,
    InDoubtError,
    InputError,
    RateLimitError,
    ValidationError,
    WriteAccessError,
)
from practiceflow.hooks import tolerant
from practiceflow.manifest import default_registry

BASE = "https://api.test/za"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-lead-tests"
AUTH = {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}
URL = f"{BASE}/api/v1/leads"
SOURCES = f"{BASE}/api/v1/settings/lead-sources"
STATUSES = f"{BASE}/api/v1/settings/lead-statuses"
KEY = "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"
MODULE = default_registry().action("create_lead")

LEAD = {
    "entityType": "Individual",
    "entityName": "Jane",
    "entitySurname": "Citizen",
    "email": "jane.citizen@example.com",
    "leadSource": "Referral",
    "leadStatus": "New",
}


@pytest.fixture
def client(tmp_path):
    with Client(
        CLIENT_ID,
        SECRET,
        base_url=BASE,
        environ={},
        profiles_file=tmp_path / "none.toml",
        retry=RetryPolicy(max_attempts=1),
        limits=RateLimits(max_wait=0),
    ) as api_client:
        yield api_client


@pytest.fixture
def api():
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def settings(api, sources=None, statuses=None):
    api.get(
        SOURCES,
        json=sources if sources is not None else ["Referral", "Website", "Walk-in"],
        match=[matchers.header_matcher(AUTH)],
    )
    api.get(
        STATUSES,
        json=statuses
        if statuses is not None
        else [{"id": 1, "name": "New"}, {"id": 2, "name": "Qualified"}],
    )


# -- input validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"entityName": "Jane"}, "entityType: required field is missing"),
        ({"entityType": "Individual"}, "entityName: required field is missing"),
        ({**LEAD, "email": "jane-at-example"}, "email: got ***; expected an email address"),
        ({**LEAD, "leadSource": 3}, "leadSource: got 3; expected a string"),
        (
            {**LEAD, "leadStatusID": 3},
            ": 'leadStatusID' is not a known field; did you mean 'leadStatus'?",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(api, client, data, expected):
    with pytest.raises(InputError) as caught:
        run_action("create_lead", data, client)
    found = [f"{issue.path}: {issue.message}" for issue in caught.value.issues]
    assert any(line.startswith(expected.lstrip()) for line in found), found
    assert len(api.calls) == 0


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (  # entityName is a declared field of its own, never a misspelt entityType
            {key: value for key, value in LEAD.items() if key != "entityType"},
            "entityType: required field is missing",
        ),
        (
            {**{k: v for k, v in LEAD.items() if k != "entityType"}, "entityTyp": "Individual"},
            "entityType: required field is missing (found 'entityTyp': a misspelling?)",
        ),
    ],
)
def test_a_missing_field_suggests_only_an_undeclared_key(api, client, data, expected):
    with pytest.raises(InputError) as caught:
        run_action("create_lead", data, client)
    found = [f"{issue.path}: {issue.message}" for issue in caught.value.issues]
    assert expected in found, found


# -- the rendered request and output ---------------------------------------------------------


def test_creates_the_lead_with_names_checked_first(api, client):
    settings(api)
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY, **LEAD},
        match=[
            matchers.header_matcher({**AUTH, "Content-Type": "application/json"}),
            matchers.json_params_matcher(LEAD, strict_match=True),
        ],
    )
    result = run_action("create_lead", LEAD, client)
    assert result.status == 201
    assert result.output == {"entityKey": KEY, **LEAD}
    assert list(MODULE.output.validator.iter_errors(result.output)) == []
    assert result.warnings == []
    assert [call.request.method for call in api.calls] == ["GET", "GET", "POST"]


def test_without_source_or_status_no_settings_are_read(api, client):
    data = {"entityType": "Company", "entityName": "Acme"}
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY},
        match=[matchers.json_params_matcher(data, strict_match=True)],
    )
    assert run_action("create_lead", data, client).output == {"entityKey": KEY}


def test_an_unknown_create_response_passes_through(api, client):
    settings(api)
    api.post(URL, status=200, json={"leadId": 99})
    result = run_action("create_lead", LEAD, client)
    assert result.output == {"leadId": 99}
    assert result.warnings == []


def test_a_case_difference_is_sent_in_the_practices_spelling(api, client):
    settings(api)
    sent = {**LEAD, "leadSource": "Referral", "leadStatus": "New"}
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY},
        match=[matchers.json_params_matcher(sent, strict_match=True)],
    )
    result = run_action(
        "create_lead", {**LEAD, "leadSource": "referral", "leadStatus": " new"}, client
    )
    assert "leadSource 'referral' sent as 'Referral' (the practice's spelling)" in result.warnings


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "leadSource",
            "Refferal",
            "leadSource: got 'Refferal'; did you mean 'Referral'? valid names (from "
            "/api/v1/settings/lead-sources) are ['Referral', 'Website', 'Walk-in']",
        ),
        ("leadStatus", "Qualifed", "leadStatus: got 'Qualifed'; did you mean 'Qualified'?"),
        ("leadSource", "Billboard", "leadSource: got 'Billboard'; valid names"),
    ],
)
def test_an_unknown_name_is_refused_before_anything_is_written(api, client, field, value, expected):
    settings(api)
    with pytest.raises(InputError) as caught:
        run_action("create_lead", {**LEAD, field: value}, client)
    assert expected in str(caught.value)
    assert "POST" not in [call.request.method for call in api.calls]


def test_unreadable_settings_are_a_warning_not_a_refusal(api, client):
    settings(api, sources={"unexpected": True}, statuses=[])
    api.post(URL, status=201, json={"entityKey": KEY})
    result = run_action("create_lead", LEAD, client)
    assert any("leadSource not checked" in w for w in result.warnings)
    assert any("leadStatus not checked" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (["Referral", "Website"], ["Referral", "Website"]),
        ([{"name": "Referral"}, {"name": "Website"}], ["Referral", "Website"]),
        ([{"Name": "Referral", "id": 1}], ["Referral"]),
        ([{"leadSourceName": "Referral"}], ["Referral"]),
        ([{"id": 1, "displayName": "Referral"}], ["Referral"]),
        ({"items": [{"title": "Referral"}]}, ["Referral"]),
        ({"data": ["Referral", "Referral"]}, ["Referral"]),
        ([{"id": 1}], []),
        ({"count": 0}, []),
        (None, []),
    ],
)
def test_tolerant_settings_name_reader(data, expected):
    assert tolerant.names(data) == expected


# -- dry run --------------------------------------------------------------------------------


def test_dry_run_reads_nothing_and_masks_personal_fields(api, client):
    result = run_action("create_lead", LEAD, client, dry_run=True)
    assert len(api.calls) == 0
    body = result.request["json"]
    assert body["entityName"] == body["entitySurname"] == body["email"] == "***"
    assert body["leadSource"] == "Referral"
    assert any("canonical_lead_names" in w for w in result.warnings)
    assert any("lead_settings_names" in w for w in result.warnings)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (400, ValidationError, "lead source and status names"),
        (401, AuthError, "Client ID and secret"),
        (403, WriteAccessError, "canWrite"),
    ],
)
def test_api_errors_keep_their_class_and_gain_the_modules_hint(api, client, status, error, hint):
    settings(api)
    api.post(URL, status=status, json={"status": status, "message": "nope"})
    with pytest.raises(error) as caught:
        run_action("create_lead", LEAD, client)
    assert hint in caught.value.hint


def test_429_is_a_rate_limit_error(api, client):
    settings(api)
    api.post(
        URL,
        status=429,
        json={"status": 429, "title": "Too Many Requests"},
        headers={"Retry-After": "2"},
    )
    with pytest.raises(RateLimitError):
        run_action("create_lead", LEAD, client)


def test_500_is_in_doubt(api, client):
    settings(api)
    api.post(URL, status=500)
    with pytest.raises(InDoubtError):
        run_action("create_lead", LEAD, client)


# -- against the sandbox over real HTTP ---------------------------------------------------------


@pytest.fixture
def live(sandbox, tmp_path):
    client_id, secret = sandbox.credentials("anz", "rw")
    with Client(
        client_id,
        secret,
        base_url=sandbox.base_url("anz"),
        environ={},
        profiles_file=tmp_path / "none.toml",
        retry=RetryPolicy(max_attempts=1),
    ) as rw:
        yield rw


@pytest.mark.integration
def test_sandbox_creates_a_lead_with_checked_names(live):
    result = run_action("create_lead", {**LEAD, "leadSource": "referral"}, live)
    assert result.status == 201
    key = result.output["entityKey"]
    assert result.output["leadSource"] == "Referral"
    assert live.get(f"/api/v1/leads/{key}")["entityName"] == "Jane"


@pytest.mark.integration
def test_sandbox_unknown_source_is_refused_with_the_practices_names(live, sandbox):
    before = len(sandbox.admin("GET", "/_admin/records/leads"))
    with pytest.raises(InputError) as caught:
        run_action("create_lead", {**LEAD, "leadSource": "Websight"}, live)
    assert "did you mean 'Website'?" in str(caught.value)
    assert len(sandbox.admin("GET", "/_admin/records/leads")) == before
