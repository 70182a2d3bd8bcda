"""find_clients: GET /api/v1/entities paged (fixed size), lastUpdated, client-side filters."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import ConfigError

KEY = "find_clients"
PATH = "/api/v1/entities"


def row(n, **extra):
    return {
        "entityKey": f"00000000-0000-4000-8000-{n:012d}",
        "entityCode": f"C{n:03d}",
        "entityName": f"Client {n}",
        "status": "Active",
        "email": f"c{n}@example.com",
        "externalSystemID": None,
        "lastUpdated": "2024-05-01T09:30:00Z",
        **extra,
    }


PAGE1 = [row(n) for n in range(1, 4)]
PAGE2 = [row(n) for n in range(4, 6)]


def pages(kit, *bodies, query=None):
    for number, body in enumerate(bodies, start=1):
        kit.api.get(
            kit.url(PATH),
            json=body,
            match=[
                matchers.header_matcher(kit.auth),
                matchers.query_param_matcher({**(query or {}), "pageNumber": str(number)}),
            ],
        )


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"limit": 0}, "limit", "got 0; expected at least 1"),
        ({"limit": "ten"}, "limit", "got 'ten'; expected an integer"),
        (
            {"lastUpdated": "yesterday"},
            "lastUpdated",
            "got 'yesterday'; expected a UTC ISO 8601 datetime",
        ),
        ({"entityCode": 12}, "entityCode", "got 12; expected a string"),
        ({"email": ""}, "email", "got ***; expected a length of at least 1"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_a_future_last_updated_is_refused_before_sending(kit):
    with pytest.raises(ConfigError, match=r"lastUpdated.*in the future"):
        kit.run(KEY, {"lastUpdated": "2999-01-01T00:00:00Z"})
    assert len(kit.api.calls) == 0


def test_pages_through_every_page_until_a_short_one(kit):
    pages(kit, PAGE1, PAGE2, query={"lastUpdated": "2024-05-01T00:00:00Z"})
    result = kit.run(KEY, {"lastUpdated": "2024-05-01T00:00:00Z"})
    assert result.output == {"items": PAGE1 + PAGE2, "count": 5, "hasMore": False}
    kit.fits(KEY, result)


def test_stops_at_the_limit_and_says_more_remain_without_reading_further(kit):
    pages(kit, PAGE1)
    result = kit.run(KEY, {"limit": 2})
    assert result.output == {"items": PAGE1[:2], "count": 2, "hasMore": True}


def test_a_limit_at_the_end_of_a_full_page_reads_one_more_page_to_know(kit):
    pages(kit, PAGE1, [])
    result = kit.run(KEY, {"limit": 3})
    assert result.output["hasMore"] is False
    assert result.output["count"] == 3


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"entityCode": "C004"}, ["C004"]),
        ({"email": "C2@EXAMPLE.com"}, ["C002"]),
        ({"externalSystemID": "crm-5"}, ["C005"]),
        ({"entityCode": "C004", "email": "c5@example.com"}, []),
    ],
)
def test_client_side_filters_where_the_api_has_none(kit, data, expected):
    page2 = [*PAGE2[:1], row(5, externalSystemID="crm-5")]
    pages(kit, PAGE1, page2)
    result = kit.run(KEY, data)
    assert [item["entityCode"] for item in result.output["items"]] == expected
    assert result.output["hasMore"] is False


def test_extra_input_fields_are_sent_as_query_parameters(kit):
    pages(kit, PAGE2, [], query={"includeInactive": "true"})
    result = kit.run(KEY, {"includeInactive": True})
    assert result.output["count"] == 2


def test_a_server_that_ignores_page_number_stops_with_a_warning(kit):
    pages(kit, PAGE1, PAGE1)
    result = kit.run(KEY, {})
    assert result.output["count"] == 3
    assert any("ignore pageNumber" in warning for warning in result.warnings)


def test_dry_run_describes_the_first_page(kit):
    result = kit.run(KEY, {"lastUpdated": "2024-05-01T00:00:00Z", "email": "x@y.z"}, dry_run=True)
    assert (
        result.request["url"]
        == kit.url(PATH) + "?lastUpdated=2024-05-01T00%3A00%3A00Z&pageNumber=1"
    )
    assert len(kit.api.calls) == 0


@pytest.mark.integration
def test_against_the_sandbox(live):
    everything = run_action(KEY, {"limit": 1000}, live).output
    assert everything["count"] >= 300
    assert everything["hasMore"] is False
    some = run_action(KEY, {"limit": 150}, live).output
    assert some["count"] == 150
    assert some["hasMore"] is True
    wanted = everything["items"][-1]
    found = run_action(KEY, {"entityCode": wanted["entityCode"]}, live).output
    assert [item["entityKey"] for item in found["items"]] == [wanted["entityKey"]]
