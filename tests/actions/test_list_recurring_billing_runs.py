"""list_recurring_billing_runs: GET /api/v1/recurring-billing/{id}/runs, one request."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "list_recurring_billing_runs"
PATH = "/api/v1/recurring-billing/77/runs"
ROWS = [{"runDate": "2024-04-01", "billingID": 1}, {"runDate": "2024-05-01", "billingID": 2}]


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"recurringBillingId": "77a"}, "recurringBillingId", "got '77a'; expected an integer"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_reads_the_runs(kit):
    kit.api.get(
        kit.url(PATH),
        json=ROWS,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {"recurringBillingId": 77})
    assert result.output == {"items": ROWS, "count": 2, "hasMore": False}
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    schedule = sandbox.admin("GET", "/_admin/records/recurring")[0]
    ident = next(value for name, value in schedule.items() if name.lower() == "recurringbillingid")
    result = run_action(KEY, {"recurringBillingId": ident}, live).output
    assert result["count"] == len(schedule["runs"])
