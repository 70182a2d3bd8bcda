"""create_client: POST /api/v1/entities (spec 2.1, 4.1): fields, addresses, x-pii, errors."""

from __future__ import annotations

import copy

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
from practiceflow.manifest import default_registry

BASE = "https://api.test/uk"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-client-tests"
AUTH = {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}
URL = f"{BASE}/api/v1/entities"
KEY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
MODULE = default_registry().action("create_client")
ADDRESS = {
    "address1": "1 George Street",
    "city": "Sydney",
    "state": "NSW",
    "postcode": "2000",
    "country": "Australia",
}

FULL = {
    "entityType": "Individual",
    "clientStatus": "Active",
    "entityCode": "CIT01",
    "externalSystemID": "crm-4711",
    "entityName": "Jane",
    "entitySurname": "Citizen",
    "entityInitials": "J",
    "email": "jane@example.com",
    "telephone": "02 9000 0000",
    "mobile": "0400 000 000",
    "taxNumber": "123456782",
    "regNumber": "51824753556",
    "idNumber": "8001015009087",
    "physicalAddress": ADDRESS,
    "postalAddress": {**ADDRESS, "address1": "PO Box 1"},
}
PERSONAL = [
    "entityName",
    "entitySurname",
    "entityInitials",
    "email",
    "telephone",
    "mobile",
    "taxNumber",
    "regNumber",
    "idNumber",
    "physicalAddress",
    "postalAddress",
]


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


# -- input validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"entityType": "Company"}, "entityName: required field is missing"),
        ({"entityName": "Acme"}, ": needs 'entityType' or 'entityTypeID'"),
        (
            {"entityName": "Acme", "entityTypeID": "two"},
            "entityTypeID: got 'two'; expected an integer",
        ),
        (
            {"entityName": "Acme", "entityType": ""},
            "entityType: got ''; expected a length of at least 1",
        ),
        (
            {"entityName": "Acme", "entityType": "Company", "email": "not-an-email"},
            "email: got ***; expected an email address",
        ),
        (
            {"entityName": "Acme", "entityType": "Company", "taxNumber": 123456782},
            "taxNumber: got ***; expected a string",
        ),
        (
            {"entityName": "Acme", "entityType": "Company", "physicalAddress": "1 George St"},
            "physicalAddress: got ***; expected a mapping",
        ),
        (
            {"entityName": "Acme", "entityType": "Company", "phone": "1"},
            ": 'phone' is not a known field",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(api, client, data, expected):
    with pytest.raises(InputError) as caught:
        run_action("create_client", data, client)
    found = [f"{issue.path}: {issue.message}" for issue in caught.value.issues]
    assert any(line.startswith(expected.lstrip()) for line in found), found
    assert len(api.calls) == 0


def test_input_errors_do_not_echo_personal_values(api, client):
    with pytest.raises(InputError) as caught:
        run_action(
            "create_client",
            {"entityType": "Company", "entityName": 42, "idNumber": 8001015009087},
            client,
        )
    assert "8001015009087" not in str(caught.value)
    assert "42" not in str(caught.value)


# -- the rendered request -------------------------------------------------------------------


def test_every_create_field_is_sent_and_absent_ones_are_left_out(api, client):
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY},
        headers={"Location": f"/api/v1/entities/{KEY}"},
        match=[
            matchers.header_matcher({**AUTH, "Content-Type": "application/json"}),
            matchers.json_params_matcher(FULL, strict_match=True),
        ],
    )
    result = run_action("create_client", FULL, client)
    assert result.status == 201
    assert result.output == {"entityKey": KEY, "location": f"/api/v1/entities/{KEY}"}
    assert list(MODULE.output.validator.iter_errors(result.output)) == []
    assert result.warnings == []


@pytest.mark.parametrize(
    "data",
    [
        {"entityType": "Company", "entityName": "Acme Pty Ltd"},
        {"entityType": "CO", "entityName": "Acme Pty Ltd"},
        {"entityTypeID": 2, "entityName": "Acme Pty Ltd"},
    ],
    ids=["type-by-name", "type-by-code", "type-by-id"],
)
def test_entity_type_by_name_code_or_id_is_sent_as_given(api, client, data):
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY},
        match=[matchers.json_params_matcher(data, strict_match=True)],
    )
    assert run_action("create_client", data, client).output["entityKey"] == KEY


def test_address_fields_beyond_the_named_ones_pass_through(api, client):
    address = {**ADDRESS, "address2": "Level 3"}
    data = {"entityType": "Company", "entityName": "Acme", "postalAddress": address}
    api.post(
        URL,
        status=201,
        json={"entityKey": KEY},
        match=[matchers.json_params_matcher(data, strict_match=True)],
    )
    run_action("create_client", data, client)


def test_other_body_fields_pass_through_and_location_is_optional(api, client):
    api.post(URL, status=201, json={"entityKey": KEY, "entityCode": "ACME01"})
    result = run_action("create_client", {"entityType": "Company", "entityName": "Acme"}, client)
    assert result.output == {"entityKey": KEY, "entityCode": "ACME01"}


def test_a_body_without_entity_key_is_a_warning(api, client):
    api.post(URL, status=201, json={"id": 7}, headers={"Location": "/api/v1/entities/x"})
    result = run_action("create_client", {"entityType": "Company", "entityName": "Acme"}, client)
    assert any("entityKey: required field is missing" in w for w in result.warnings)


# -- dry run: secrets and personal data masked ------------------------------------------------


def test_dry_run_masks_secrets_and_every_personal_field(api, client):
    result = run_action("create_client", FULL, client, dry_run=True)
    assert len(api.calls) == 0
    body = result.request["json"]
    for field in PERSONAL:
        assert body[field] == "***", field
    assert body["entityType"] == "Individual"
    assert body["externalSystemID"] == "crm-4711"
    assert result.request["headers"]["X-SVC-Auth-Key"] == "***"
    text = repr(result)
    for secret in (SECRET, "123456782", "jane@example.com", "George Street"):
        assert secret not in text


def test_the_module_marks_the_spec_personal_fields():
    pii = {path[0] for path in MODULE.pii_paths}
    assert {"taxNumber", "regNumber", "idNumber", "physicalAddress", "postalAddress"} <= pii


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (400, ValidationError, "check the entity type"),
        (401, AuthError, "region matches"),
        (403, WriteAccessError, "canWrite"),
    ],
)
def test_api_errors_keep_their_class_and_gain_the_modules_hint(api, client, status, error, hint):
    api.post(URL, status=status, json={"status": status, "detail": "refused"})
    with pytest.raises(error) as caught:
        run_action("create_client", {"entityType": "Company", "entityName": "Acme"}, client)
    assert hint in caught.value.hint
    assert "refused" in str(caught.value)


def test_429_is_a_rate_limit_error(api, client):
    api.post(
        URL,
        status=429,
        json={"status": 429, "title": "Too Many Requests"},
        headers={"Retry-After": "5"},
    )
    with pytest.raises(RateLimitError) as caught:
        run_action("create_client", {"entityType": "Company", "entityName": "Acme"}, client)
    assert caught.value.retry_after == 5


def test_500_is_in_doubt(api, client):
    api.post(URL, status=500)
    with pytest.raises(InDoubtError):
        run_action("create_client", copy.deepcopy(FULL), client)
    assert len(api.calls) == 1


# -- against the sandbox over real HTTP ---------------------------------------------------------


@pytest.fixture
def live(sandbox, tmp_path):
    def make(kind="rw", region="anz", base_region="anz"):
        client_id, secret = sandbox.credentials(region, kind)
        return Client(
            client_id,
            secret,
            base_url=sandbox.base_url(base_region),
            environ={},
            profiles_file=tmp_path / "none.toml",
            retry=RetryPolicy(max_attempts=1),
        )

    return make


@pytest.mark.integration
def test_sandbox_creates_the_client_with_every_field(live):
    with live() as rw:
        result = run_action("create_client", {**FULL, "entityType": "IND"}, rw)
        assert result.status == 201
        key = result.output["entityKey"]
        assert result.output["location"].endswith(f"/api/v1/entities/{key}")
        stored = rw.get(f"/api/v1/entities/{key}")
    assert stored["entityType"] == "Individual"
    assert stored["status"] == "Active"
    assert stored["physicalAddress"]["city"] == "Sydney"
    assert stored["taxNumber"] == "123456782"


@pytest.mark.integration
def test_sandbox_unknown_entity_type_is_a_validation_error_with_the_hint(live):
    with live() as rw, pytest.raises(ValidationError) as caught:
        run_action("create_client", {"entityType": "Spaceship", "entityName": "X"}, rw)
    assert "check the entity type" in caught.value.hint


@pytest.mark.integration
def test_sandbox_read_only_and_wrong_region(live):
    with live("ro") as ro, pytest.raises(WriteAccessError):
        run_action("create_client", {"entityType": "Company", "entityName": "X"}, ro)
    with live("rw", region="anz", base_region="uk") as wrong, pytest.raises(AuthError):
        run_action("create_client", {"entityType": "Company", "entityName": "X"}, wrong)
