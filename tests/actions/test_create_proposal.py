"""create_proposal: POST /api/v1/proposals; services and extras as given."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "create_proposal"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/proposals"
INPUT = {
    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
    "services": [{"serviceID": 400}],
    "title": "2024 engagement",
}
ANSWER = {"proposalKey": "5b7d9f1a-3c5e-4a7b-8d9f-1a3c5e7a9b1d", "status": "Draft"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        # Spec 4.2 names services without "optional" (jobs and billings are optional).
        ({"entityKey": EK}, "services", "required field is missing"),
        (
            {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "services": []},
            "services",
            "got a list; expected at least this many items: 1",
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
                {
                    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
                    "services": [{"serviceID": 400}],
                    "title": "2024 engagement",
                },
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
    services = run_action("list_proposal_services", {}, live).output["items"]
    service_id = next(value for name, value in services[0].items() if name.lower() == "serviceid")
    data = {"entityKey": client, "services": [{"serviceID": service_id}]}
    result = run_action(KEY, data, live)
    assert result.status == 201
    found = run_action("find_proposals", {"entityKey": client}, live).output["items"]
    assert result.output["proposalKey"] in [row["proposalKey"] for row in found]
    with pytest.raises(WriteAccessError):
        run_action(KEY, data, live_ro)
