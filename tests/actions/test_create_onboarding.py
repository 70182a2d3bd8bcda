"""create_onboarding: POST /api/v1/onboardings/create (spec 2.7, 3, 4.1)."""

from __future__ import annotations

import copy

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import ValidationError, WriteAccessError

KEY = "create_onboarding"
PATH = "/api/v1/onboardings/create"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
JOB = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
USER = "7c2e0ca1-5b3d-4e8f-9a1b-2c3d4e5f6a7b"
INPUT = {
    "sendToRecipient": True,
    "userKey": USER,
    "recipient": {"name": "Jane Citizen", "email": "jane@example.com"},
    "clients": [{"entityKey": EK}, {"entityType": "Individual", "entityName": "Jane Citizen"}],
}
ANSWER = {
    "onboardingKey": JOB,
    "status": "Sent",
    "userKey": USER,
    "recipient": INPUT["recipient"],
    "clients": [{"entityKey": EK}],
}


def changed(**fields):
    data = copy.deepcopy(INPUT)
    for name, value in fields.items():
        if value is None:
            data.pop(name)
        else:
            data[name] = value
    return data


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (changed(recipient=None), "recipient", "required field is missing"),
        (changed(clients=None), "clients", "required field is missing"),
        (changed(clients=[]), "clients", "got a list; expected at least this many items: 1"),
        (changed(clients=[{}]), "clients[0]", "{} should be non-empty"),
        (
            changed(clients=[{"entityKey": "ACME"}]),
            "clients[0].entityKey",
            "got 'ACME'; expected a UUID",
        ),
        (changed(recipient={"name": "Jane"}), "recipient.email", "required field is missing"),
        (changed(sendToRecipient="yes"), "sendToRecipient", "got 'yes'; expected true or false"),
        (changed(userKey="staff-1"), "userKey", "got 'staff-1'; expected a UUID"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_one_recipient_existing_and_quick_add_clients_are_sent_as_given(kit):
    kit.api.post(
        kit.url(PATH),
        status=201,
        json=ANSWER,
        match=[
            matchers.header_matcher({**kit.auth, "Content-Type": "application/json"}),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(INPUT, strict_match=True),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 201
    assert result.output == ANSWER
    kit.fits(KEY, result)


def test_extra_body_fields_are_sent_as_given(kit):
    data = changed(sendToRecipient=False, message="Welcome aboard")
    kit.api.post(
        kit.url(PATH),
        status=201,
        json={**ANSWER, "status": "Draft"},
        match=[matchers.json_params_matcher(data, strict_match=True)],
    )
    assert kit.run(KEY, data).output["status"] == "Draft"


def test_dry_run_masks_the_recipient(kit):
    result = kit.run(KEY, INPUT, dry_run=True)
    assert result.request["json"]["recipient"] == "***"
    assert "jane@example.com" not in repr(result)


def test_insufficient_wallet_is_a_clear_nothing_was_created_error(kit):
    kit.api.post(
        kit.url(PATH),
        status=400,
        json={"status": 400, "title": "Bad Request", "detail": "Insufficient wallet balance"},
    )
    with pytest.raises(ValidationError) as caught:
        kit.run(KEY, INPUT)
    assert "NOTHING WAS CREATED" in caught.value.hint
    assert "sendToRecipient false" in caught.value.hint
    assert "Insufficient wallet balance" in str(caught.value)


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    client = run_action("find_clients", {"limit": 1}, live).output["items"][0]["entityKey"]
    data = {
        "sendToRecipient": True,
        "recipient": {"name": "Jane", "email": "jane@example.com"},
        "clients": [{"entityKey": client}],
    }
    result = run_action(KEY, data, live)
    assert result.output["status"] == "Sent"
    draft = run_action(KEY, {**data, "sendToRecipient": False}, live)
    assert draft.output["status"] == "Draft"
    before = len(sandbox.admin("GET", "/_admin/records/onboardings"))
    sandbox.admin("POST", "/_admin/config", {"walletBalance": 0})
    with pytest.raises(ValidationError) as caught:
        run_action(KEY, data, live)
    assert "NOTHING WAS CREATED" in str(caught.value)
    assert len(sandbox.admin("GET", "/_admin/records/onboardings")) == before
    with pytest.raises(WriteAccessError):
        run_action(KEY, data, live_ro)
