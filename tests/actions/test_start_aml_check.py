"""start_aml_check: POST /api/v1/id-verifications/aml-checks; level standard|extensive."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "start_aml_check"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/id-verifications/aml-checks"
INPUT = {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "level": "extensive"}
ANSWER = {
    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
    "level": "extensive",
    "result": "Clear",
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "level": "deep"},
            "level",
            "got 'deep'; expected one of ['standard', 'extensive']",
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
        json={
            "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
            "level": "extensive",
            "result": "Clear",
        },
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "level": "extensive"},
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
    for level in ("standard", "extensive"):
        result = run_action(KEY, {"entityKey": client, "level": level}, live)
        assert result.output["level"] == level
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"entityKey": client, "level": "standard"}, live_ro)
