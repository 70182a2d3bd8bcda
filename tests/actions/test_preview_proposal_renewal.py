"""preview_proposal_renewal: GET /api/v1/proposals/{key}/renew-preview, passed through."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "preview_proposal_renewal"
INPUT = {"proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d"}
PATH = "/api/v1/proposals/5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d/renew-preview"
BODY = {
    "proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d",
    "signatories": [{"name": "Jane Citizen"}],
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
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
    proposal = sandbox.admin("GET", "/_admin/records/proposals")[0]
    result = run_action(KEY, {"proposalKey": proposal["proposalKey"]}, live)
    assert result.output
    # a preview changes nothing
    after = run_action("get_proposal", {"proposalKey": proposal["proposalKey"]}, live)
    assert after.output["status"] == proposal["status"]
