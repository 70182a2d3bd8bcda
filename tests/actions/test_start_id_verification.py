"""start_id_verification: POST /api/v1/id-verifications/send; includeAml; extras as given."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "start_id_verification"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/id-verifications/send"
INPUT = {
    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
    "includeAml": True,
    "mobile": "0400 000 000",
}
ANSWER = {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "status": "Sent"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "includeAml": "yes"},
            "includeAml",
            "got 'yes'; expected true or false",
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
        json={"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "status": "Sent"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {
                    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
                    "includeAml": True,
                    "mobile": "0400 000 000",
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
    result = run_action(KEY, {"entityKey": client, "includeAml": True}, live)
    assert result.status == 201
    assert result.output["entityKey"] == client
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"entityKey": client}, live_ro)
