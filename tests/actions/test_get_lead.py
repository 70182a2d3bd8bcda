"""get_lead: GET /api/v1/leads/{entityKey} (spec 2.3), passed through."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_lead"
INPUT = {"entityKey": "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"}
PATH = "/api/v1/leads/6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01"
BODY = {
    "entityKey": "6f1c2f4e-0d55-4a43-9f7e-3c1d2b8a9e01",
    "entityName": "Jane",
    "leadSource": "Referral",
    "leadStatus": "New",
    "score": 7,
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": "x"}, "entityKey", "got 'x'; expected a UUID"),
        ({**INPUT, "extra": 1}, "", "'extra' is not a known field"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request_and_passes_the_answer_through(kit):
    kit.api.get(
        kit.url(PATH),
        json=BODY,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, INPUT)
    assert result.output == BODY
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    lead = sandbox.admin("GET", "/_admin/records/leads")[0]
    result = run_action(KEY, {"entityKey": lead["entityKey"]}, live)
    assert result.output["entityKey"] == lead["entityKey"]
    assert result.output["leadStatus"] == lead["leadStatus"]
