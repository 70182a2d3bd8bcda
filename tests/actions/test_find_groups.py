"""find_groups: GET /api/v1/groups/list with every filter of spec 4.1, paged, limit."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "find_groups"
PATH = "/api/v1/groups/list"


def group(n, **extra):
    return {
        "groupID": n,
        "groupName": f"Group {n}",
        "groupCode": f"GRP{n:03d}",
        "isActive": True,
        **extra,
    }


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"isActive": "yes"}, "isActive", "got 'yes'; expected true or false"),
        ({"includeMembers": 1}, "includeMembers", "got 1; expected true or false"),
        ({"name": ""}, "name", "got ''; expected a length of at least 1"),
        ({"lastUpdated": "2024-05-01"}, "lastUpdated", "got '2024-05-01'"),
        (
            {"groupcode": "GRP001"},
            "",
            "'groupcode' is not a known field; did you mean 'groupCode'?",
        ),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_every_filter_is_sent_as_the_api_names_it(kit):
    members = [
        {
            "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
            "entityName": "A",
            "entityEmail": None,
        }
    ]
    kit.api.get(
        kit.url(PATH),
        json=[group(1, members=members)],
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher(
                {
                    "name": "Smith",
                    "groupCode": "GRP001",
                    "isActive": "false",
                    "includeMembers": "true",
                    "lastUpdated": "2024-05-01T00:00:00Z",
                    "pageNumber": "1",
                }
            ),
        ],
    )
    # A one-row first page sets the (fixed) page size to one: the end shows as an empty page.
    kit.api.get(kit.url(PATH), json=[])
    data = {
        "name": "Smith",
        "groupCode": "GRP001",
        "isActive": False,
        "includeMembers": True,
        "lastUpdated": "2024-05-01T00:00:00Z",
    }
    result = kit.run(KEY, data)
    assert result.output == {"items": [group(1, members=members)], "count": 1, "hasMore": False}
    kit.fits(KEY, result)


def test_pages_through_and_stops_at_the_limit(kit):
    for number, rows in enumerate([[group(1), group(2)], [group(3), group(4)]], start=1):
        kit.api.get(
            kit.url(PATH),
            json=rows,
            match=[matchers.query_param_matcher({"pageNumber": str(number)})],
        )
    result = kit.run(KEY, {"limit": 3})
    assert [row["groupID"] for row in result.output["items"]] == [1, 2, 3]
    assert result.output["hasMore"] is True


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    stored = sandbox.admin("GET", "/_admin/records/groups")
    everything = run_action(KEY, {}, live).output
    assert (everything["count"], everything["hasMore"]) == (len(stored), False)
    wanted = stored[0]
    found = run_action(KEY, {"groupCode": wanted["groupCode"], "includeMembers": True}, live).output
    assert [row["groupID"] for row in found["items"]] == [wanted["groupID"]]
    assert "members" in found["items"][0]
    active = run_action(KEY, {"isActive": True}, live).output["items"]
    assert all(row["isActive"] is True for row in active)
