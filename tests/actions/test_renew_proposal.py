"""renew_proposal: POST /api/v1/proposals/{key}/renew (spec 3); signatory as given."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "renew_proposal"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/proposals/5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d/renew"
INPUT = {
    "proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d",
    "signatoryKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
}
ANSWER = {"proposalKey": "7d9f1b3c-5e7a-4b9d-8f1a-3c5e7a9b1d3f", "status": "Draft"}


def test_sends_the_exact_request(kit):
    kit.api.add(
        "POST",
        kit.url(PATH),
        status=201,
        json={"proposalKey": "7d9f1b3c-5e7a-4b9d-8f1a-3c5e7a9b1d3f", "status": "Draft"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {"signatoryKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"}, strict_match=True
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
    original = sandbox.admin("GET", "/_admin/records/proposals")[0]
    preview = run_action("preview_proposal_renewal", {"proposalKey": original["proposalKey"]}, live)
    assert preview.output
    result = run_action(KEY, {"proposalKey": original["proposalKey"]}, live)
    assert result.output["status"] == "Draft"
    renewed = run_action("get_proposal", {"proposalKey": original["proposalKey"]}, live)
    assert renewed.output["status"] == "Renewed"
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"proposalKey": original["proposalKey"]}, live_ro)
