"""get_bill: GET /api/v1/bills/{billingId} (spec 2.4 bill detail)."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_bill"
INPUT = {"billingID": 1042}
PATH = "/api/v1/bills/1042"
BODY = {
    "billingID": 1042,
    "billNumber": "INV-1042",
    "billTotal": 110.0,
    "externalID": "X-1",
    "externalNumber": "L-55",
    "externalURL": "https://ledger.example/inv/1",
    "lineItems": [{"billingDetailID": 1, "billAmount": 100.0, "billTax": 10.0, "billTotal": 110.0}],
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"billingID": "INV-1042"}, "billingID", "got 'INV-1042'; expected an integer"),
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
    bill = sandbox.admin("GET", "/_admin/records/bills")[0]
    result = run_action(KEY, {"billingID": bill["billingID"]}, live)
    assert result.output["billNumber"] == bill["billNumber"]
    assert result.warnings == []
