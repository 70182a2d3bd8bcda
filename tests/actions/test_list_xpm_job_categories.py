"""list_xpm_job_categories.

GET /api/v1/proposals/xpm-job-categories (spec 4.2 proposal catalogs); rows from any list
envelope.
"""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "list_xpm_job_categories"
PATH = "/api/v1/proposals/xpm-job-categories"
ROWS = [{"id": 1, "name": "Compliance"}]


def test_unknown_input_is_refused_and_nothing_sent(kit):
    kit.bad_input(KEY, {"pageNumber": 2}, "", "'pageNumber' is not allowed here")


@pytest.mark.parametrize(
    "body",
    [ROWS, {"items": ROWS}, {"data": ROWS, "hasMore": False}],
    ids=["bare-list", "items-envelope", "data-envelope"],
)
def test_reads_the_rows_with_the_exact_request(kit, body):
    kit.api.get(
        kit.url(PATH),
        json=body,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {})
    assert result.output == {"items": ROWS, "count": len(ROWS), "hasMore": False}
    kit.fits(KEY, result)


def test_an_envelope_saying_more_remain_is_reported(kit):
    kit.api.get(kit.url(PATH), json={"items": ROWS, "hasMore": True})
    assert kit.run(KEY, {}).output["hasMore"] is True


@pytest.mark.integration
def test_against_the_sandbox(live):
    result = run_action(KEY, {}, live)
    assert result.output["count"] >= 1
    assert result.output["count"] == len(result.output["items"])
    assert result.warnings == []
