"""convert_lead: POST /api/v1/leads/{entityKey}/convert-to-client (spec 3, 4.1 rule 3)."""

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
    NotFoundError,
    RateLimitError,
    ValidationError,
    WriteAccessError,
)
from practiceflow.manifest import default_registry

BASE = "https://api.test/anz"
CLIENT_ID = "11111111-2222-3333-4444-555555555555"
SECRET = "s3cr3t-convert-tests"
AUTH = {"X-SVC-Auth-ID": CLIENT_ID, "X-SVC-Auth-Key": SECRET}
KEY = "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"
URL = f"{BASE}/api/v1/leads/{KEY}/convert-to-client"
MODULE = default_registry().action("convert_lead")


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


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, "entityKey: required field is missing"),
        ({"entityKey": 12}, "entityKey: got 12; expected a string"),
        ({"entityKey": "../../entities"}, "entityKey: got '../../entities'; expected a UUID"),
        ({"entityKey": KEY, "key": KEY}, ": 'key' is not a known field"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(api, client, data, expected):
    with pytest.raises(InputError) as caught:
        run_action("convert_lead", data, client)
    found = [f"{issue.path}: {issue.message}" for issue in caught.value.issues]
    assert any(line.startswith(expected.lstrip()) for line in found), found
    assert len(api.calls) == 0


def test_converts_with_an_empty_post_and_keeps_the_key(api, client):
    api.post(
        URL,
        status=200,
        body="",
        match=[matchers.header_matcher(AUTH), matchers.query_param_matcher({})],
    )
    result = run_action("convert_lead", {"entityKey": KEY}, client)
    assert api.calls[0].request.body is None
    assert result.output == {"entityKey": KEY, "status": "Active"}
    assert list(MODULE.output.validator.iter_errors(result.output)) == []
    assert result.warnings == []


def test_a_body_from_the_server_is_kept(api, client):
    api.post(URL, status=200, json={"entityKey": KEY, "status": "Active", "entityName": "Jane"})
    result = run_action("convert_lead", {"entityKey": KEY}, client)
    assert result.output == {"entityKey": KEY, "status": "Active", "entityName": "Jane"}


def test_already_a_client_says_so_clearly(api, client):
    api.post(URL, status=400, json={"status": 400, "message": "Entity is already a client"})
    with pytest.raises(ValidationError) as caught:
        run_action("convert_lead", {"entityKey": KEY}, client)
    text = str(caught.value)
    assert "the entity is already a client" in text
    assert "nothing to convert" in text
    assert "Entity is already a client" in text


@pytest.mark.parametrize(
    ("status", "error", "hint"),
    [
        (401, AuthError, "Client ID and secret"),
        (403, WriteAccessError, "canWrite"),
        (404, NotFoundError, "no lead with this entityKey"),
    ],
)
def test_api_errors_keep_their_class_and_gain_the_modules_hint(api, client, status, error, hint):
    api.post(URL, status=status, json={"status": status})
    with pytest.raises(error) as caught:
        run_action("convert_lead", {"entityKey": KEY}, client)
    assert hint in caught.value.hint


def test_429_is_a_rate_limit_error(api, client):
    api.post(
        URL,
        status=429,
        json={"status": 429, "title": "Too Many Requests"},
        headers={"Retry-After": "1"},
    )
    with pytest.raises(RateLimitError):
        run_action("convert_lead", {"entityKey": KEY}, client)


def test_500_is_in_doubt(api, client):
    api.post(URL, status=500)
    with pytest.raises(InDoubtError):
        run_action("convert_lead", {"entityKey": KEY}, client)


def test_dry_run_describes_the_path_with_the_key(client):
    result = run_action("convert_lead", {"entityKey": KEY}, client, dry_run=True)
    assert result.request["url"] == URL
    assert result.request["json"] is None


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
def test_sandbox_conversion_keeps_the_key_and_a_second_one_says_already_a_client(live):
    lead = run_action("create_lead", {"entityType": "Individual", "entityName": "Jo"}, live).output[
        "entityKey"
    ]
    result = run_action("convert_lead", {"entityKey": lead}, live)
    assert result.output["entityKey"] == lead
    assert result.output["status"] == "Active"
    assert live.get(f"/api/v1/entities/{lead}")["status"] == "Active"
    with pytest.raises(ValidationError) as caught:
        run_action("convert_lead", {"entityKey": lead}, live)
    assert "already a client" in str(caught.value)


@pytest.mark.integration
def test_sandbox_unknown_lead_is_not_found(live):
    with pytest.raises(NotFoundError, match="no lead with this entityKey"):
        run_action("convert_lead", {"entityKey": "00000000-0000-4000-8000-000000000000"}, live)
