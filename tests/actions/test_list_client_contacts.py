"""list_client_contacts: GET /api/v1/entities/{entityKey}/contacts, one request, limit."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "list_client_contacts"
ENTITY = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = f"/api/v1/entities/{ENTITY}/contacts"
ROWS = [{"email": "a@example.com"}, {"email": "b@example.com"}, {"email": "c@example.com"}]


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"entityKey": ENTITY, "limit": 0}, "limit", "got 0; expected at least 1"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_reads_every_contact_in_one_request(kit):
    kit.api.get(
        kit.url(PATH),
        json=ROWS,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {"entityKey": ENTITY})
    assert result.output == {"items": ROWS, "count": 3, "hasMore": False}
    kit.fits(KEY, result)


def test_a_limit_cuts_the_list_and_says_more_remain(kit):
    kit.api.get(kit.url(PATH), json={"items": ROWS})
    result = kit.run(KEY, {"entityKey": ENTITY, "limit": 2})
    assert result.output == {"items": ROWS[:2], "count": 2, "hasMore": True}


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    contact = sandbox.admin("GET", "/_admin/records/contacts")[0]
    result = run_action(KEY, {"entityKey": contact["entityKey"]}, live).output
    assert contact["email"] in [row.get("email") for row in result["items"]]
