"""create_proposal_from_template: POST /api/v1/proposals/from-template."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "create_proposal_from_template"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/proposals/from-template"
INPUT = {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "templateId": 901}
ANSWER = {"proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d", "status": "Draft"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "templateId": True},
            "templateId",
            "got true; expected an integer or a string",
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
        json={"proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d", "status": "Draft"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "templateId": 901},
                strict_match=True,
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
    client = run_action("find_clients", {"limit": 1}, live).output["items"][0]["entityKey"]
    # The sandbox's proposal templates are its own guess; 901 is one of them (test data only).
    result = run_action(KEY, {"entityKey": client, "templateId": 901}, live)
    assert result.status == 201
    assert result.output["status"] == "Draft"
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"entityKey": client, "templateId": 901}, live_ro)
