"""add_lead_note: POST /api/v1/leads/{entityKey}/notes; extra fields sent as given."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "add_lead_note"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/leads/6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01/notes"
INPUT = {
    "entityKey": "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01",
    "note": "Called back",
    "isPinned": True,
}
ANSWER = {"noteID": 5, "note": "Called back"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"entityKey": "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01", "note": ""},
            "note",
            "got ***; expected a length of at least 1",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request(kit):
    kit.api.add(
        "POST",
        kit.url(PATH),
        status=201,
        json={"noteID": 5, "note": "Called back"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {"note": "Called back", "isPinned": True}, strict_match=True
            ),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 201
    assert result.output == ANSWER
    kit.fits(KEY, result)


def test_needs_write_access():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).needs_write is True


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    lead = sandbox.admin("GET", "/_admin/records/leads")[0]
    result = run_action(KEY, {"entityKey": lead["entityKey"], "note": "Wants a quote"}, live)
    assert result.status == 201
    assert result.output["note"] == "Wants a quote"
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"entityKey": lead["entityKey"], "note": "x"}, live_ro)
