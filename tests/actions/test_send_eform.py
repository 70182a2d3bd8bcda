"""send_eform: POST /api/v1/eforms/send (spec 2.6, 3): sent false is a warning, not an error."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "send_eform"
PATH = "/api/v1/eforms/send"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
FORM = "2c4e6a8b-1d3f-4a5b-9c7d-8e0f1a2b3c4d"
URL = f"https://portal.example.com/forms/{FORM}"
INPUT = {"templateId": 12, "entityKey": EK, "mute": False}
SENT = {
    "formKey": FORM,
    "templateId": 12,
    "entityKey": EK,
    "accessUrl": URL,
    "emailSent": True,
    "sent": True,
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": EK}, "templateId", "required field is missing"),
        (
            {"templateId": "twelve", "entityKey": EK},
            "templateId",
            "got 'twelve'; expected an integer",
        ),
        ({"templateId": 12}, "", "needs 'entityKey' or 'recipient'"),
        (
            {"templateId": 12, "entityKey": EK, "mute": "no"},
            "mute",
            "got 'no'; expected true or false",
        ),
        ({"templateId": 12, "recipient": {}}, "recipient", "{} should be non-empty"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


@pytest.mark.parametrize(
    "data",
    [
        INPUT,
        {
            "templateId": 12,
            "recipient": {"name": "Jane", "email": "jane@example.com"},
            "mute": True,
        },
    ],
    ids=["stored-client", "ad-hoc-recipient-muted"],
)
def test_sends_the_exact_request(kit, data):
    kit.api.post(
        kit.url(PATH),
        status=201,
        json=SENT,
        match=[
            matchers.header_matcher({**kit.auth, "Content-Type": "application/json"}),
            matchers.json_params_matcher(data, strict_match=True),
        ],
    )
    result = kit.run(KEY, data)
    assert result.output == SENT
    kit.fits(KEY, result)


def test_a_form_left_as_a_draft_is_a_warning_with_the_access_url(kit):
    kit.api.post(kit.url(PATH), status=201, json={**SENT, "sent": False, "emailSent": False})
    result = kit.run(KEY, INPUT)
    assert result.output["sent"] is False
    assert len(result.warnings) == 1
    assert "NOT emailed" in result.warnings[0]
    assert URL in result.warnings[0]


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    template = run_action("list_eform_templates", {"limit": 1}, live).output["items"][0]
    client = run_action("find_clients", {"limit": 1}, live).output["items"][0]["entityKey"]
    data = {"templateId": template["formTemplateId"], "entityKey": client}
    sent = run_action(KEY, data, live)
    assert sent.output["sent"] is True
    assert sent.warnings == []
    sandbox.admin("POST", "/_admin/config", {"eformEmailFails": True})
    draft = run_action(KEY, data, live)
    assert draft.output["sent"] is False
    assert draft.output["accessUrl"] in draft.warnings[0]
    muted = run_action(KEY, {**data, "mute": True}, live)
    assert muted.output["sent"] is True
    with pytest.raises(WriteAccessError):
        run_action(KEY, data, live_ro)
