"""create_contact: POST /api/v1/entities/{entityKey}/contacts; the contact as given."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "create_contact"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/entities/0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58/contacts"
INPUT = {
    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
    "contact": {"firstName": "Jane", "email": "jane@example.com"},
}
ANSWER = {"contactKey": "c-1", "firstName": "Jane", "email": "jane@example.com"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "contact": {}},
            "contact",
            "{} should be non-empty",
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
        json={"contactKey": "c-1", "firstName": "Jane", "email": "jane@example.com"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {"firstName": "Jane", "email": "jane@example.com"}, strict_match=True
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
    client = sandbox.admin("GET", "/_admin/records/contacts")[0]["entityKey"]
    contact = {"firstName": "Jane", "lastName": "Citizen", "email": "jane.citizen@example.com"}
    result = run_action(KEY, {"entityKey": client, "contact": contact}, live)
    assert result.status == 201
    listed = run_action("list_client_contacts", {"entityKey": client}, live).output["items"]
    assert "jane.citizen@example.com" in [row.get("email") for row in listed]
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"entityKey": client, "contact": contact}, live_ro)
