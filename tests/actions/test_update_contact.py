"""update_contact.

PUT /api/v1/entities/{entityKey}/contacts[/{contactKey}]; the contact as given.
"""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "update_contact"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
CK = "5d1e8a7c-2b44-4f0e-9c1d-3a6b7e8f9012"
PATH = f"/api/v1/entities/{EK}/contacts/{CK}"
INPUT = {
    "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
    "contactKey": "5d1e8a7c-2b44-4f0e-9c1d-3a6b7e8f9012",
    "contact": {"email": "new@example.com"},
}
ANSWER = {"email": "new@example.com"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {
                "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
                "contactKey": "",
                "contact": {"a": 1},
            },
            "contactKey",
            "got ''; expected a length of at least 1",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request(kit):
    kit.api.add(
        "PUT",
        kit.url(PATH),
        status=200,
        json={"email": "new@example.com"},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher({"email": "new@example.com"}, strict_match=True),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 200
    assert result.output == ANSWER
    kit.fits(KEY, result)


def test_needs_write_access():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).needs_write is True


def test_without_a_contact_key_the_clients_contacts_path_is_used(kit):
    kit.api.put(
        kit.url(f"/api/v1/entities/{EK}/contacts"),
        json={"contactKey": "c-1", "email": "new@example.com"},
        match=[
            matchers.json_params_matcher(
                {"contactKey": "c-1", "email": "new@example.com"}, strict_match=True
            )
        ],
    )
    data = {"entityKey": EK, "contact": {"contactKey": "c-1", "email": "new@example.com"}}
    assert kit.run(KEY, data).output["email"] == "new@example.com"


def test_dry_run_masks_the_contact(kit):
    result = kit.run(KEY, INPUT, dry_run=True)
    assert result.request["json"] == "***"
    assert "new@example.com" not in repr(result)


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    contact = sandbox.admin("GET", "/_admin/records/contacts")[0]
    data = {
        "entityKey": contact["entityKey"],
        "contactKey": contact["contactKey"],
        "contact": {"mobile": "0400 111 222"},
    }
    result = run_action(KEY, data, live)
    assert result.output["mobile"] == "0400 111 222"
    with pytest.raises(WriteAccessError):
        run_action(KEY, data, live_ro)
