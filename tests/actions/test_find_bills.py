"""find_bills.

GET /api/v1/bills/list (bills by bill-date range, paged): every page, limit, hasMore.
"""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "find_bills"
PATH = "/api/v1/bills/list"
INPUT = {"startDate": "2024-01-01", "endDate": "2024-12-31"}
QUERY = {"startDate": "2024-01-01", "endDate": "2024-12-31"}
FULL = 3  # rows of a full page (learned from page one)


def rows(first, last):
    return [
        {"billingID": n, "billDate": "2024-05-01", "externalNumber": None}
        for n in range(first, last + 1)
    ]


def pages(kit, *bodies):
    for number, body in enumerate(bodies, start=1):
        kit.api.get(
            kit.url(PATH),
            json=body,
            match=[
                matchers.header_matcher(kit.auth),
                matchers.query_param_matcher(
                    {**{k: str(v) for k, v in QUERY.items()}, "pageNumber": str(number)}
                ),
            ],
        )


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"startDate": "1/1/2024"}, "startDate", "got '1/1/2024'"),
        ({"limit": -1}, "limit", "got -1; expected at least 1"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


@pytest.mark.parametrize(
    "wrap", [lambda r: r, lambda r: {"items": r}], ids=["bare-list", "items-envelope"]
)
def test_pages_until_a_short_page(kit, wrap):
    pages(kit, wrap(rows(1, FULL)), wrap(rows(FULL + 1, FULL + 2)))
    result = kit.run(KEY, {**INPUT, "limit": 1000})
    assert result.output == {"items": rows(1, FULL + 2), "count": FULL + 2, "hasMore": False}
    kit.fits(KEY, result)


def test_stops_at_the_limit_and_says_more_remain(kit):
    pages(kit, rows(1, FULL))
    result = kit.run(KEY, {**INPUT, "limit": 2})
    assert result.output == {"items": rows(1, 2), "count": 2, "hasMore": True}


def test_has_more_false_in_an_envelope_ends_the_list(kit):
    pages(kit, {"items": rows(1, 3), "hasMore": False})
    assert kit.run(KEY, INPUT).output["count"] == 3


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    bills = sandbox.admin("GET", "/_admin/records/bills")
    day = sorted(bill["billDate"] for bill in bills)[len(bills) // 2]
    result = run_action(KEY, {"startDate": day, "endDate": day}, live).output
    expected = sorted(bill["billingID"] for bill in bills if bill["billDate"] == day)
    assert sorted(row["billingID"] for row in result["items"]) == expected
    assert result["hasMore"] is False
