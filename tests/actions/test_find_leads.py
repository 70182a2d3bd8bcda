"""find_leads.

GET /api/v1/leads (paged, lastUpdated and extras as query): every page, limit, hasMore.
"""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "find_leads"
PATH = "/api/v1/leads"
INPUT = {"lastUpdated": "2024-05-01T00:00:00Z"}
QUERY = {"lastUpdated": "2024-05-01T00:00:00Z"}
FULL = 3  # rows of a full page (learned from page one)


def rows(first, last):
    return [
        {
            "entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
            "entityName": f"Lead {n}",
            "leadStatus": "New",
        }
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
        ({"limit": 0}, "limit", "got 0; expected at least 1"),
        ({"lastUpdated": "May"}, "lastUpdated", "got 'May'"),
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
    everything = run_action(KEY, {"limit": 10000}, live).output
    assert everything["count"] == len(sandbox.admin("GET", "/_admin/records/leads"))
    assert everything["hasMore"] is False
    some = run_action(KEY, {"limit": 5}, live).output
    assert (some["count"], some["hasMore"]) == (5, True)
