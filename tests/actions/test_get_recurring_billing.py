"""get_recurring_billing: GET /api/v1/recurring-billing/{recurringBillingId}, passed through."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_recurring_billing"
INPUT = {"recurringBillingId": 77}
PATH = "/api/v1/recurring-billing/77"
BODY = {"frequency": "Monthly", "amount": 123.0}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            {"recurringBillingId": "seventy"},
            "recurringBillingId",
            "got 'seventy'; expected an integer",
        ),
        ({"recurringBillingId": 0}, "recurringBillingId", "got 0; expected at least 1"),
        ({**INPUT, "extra": 1}, "", "'extra' is not a known field"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request_and_passes_the_answer_through(kit):
    kit.api.get(
        kit.url(PATH),
        json=BODY,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, INPUT)
    assert result.output == BODY
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    schedule = sandbox.admin("GET", "/_admin/records/recurring")[0]
    ident = next(value for name, value in schedule.items() if name.lower() == "recurringbillingid")
    result = run_action(KEY, {"recurringBillingId": ident}, live)
    assert result.output["frequency"] == schedule["frequency"]
