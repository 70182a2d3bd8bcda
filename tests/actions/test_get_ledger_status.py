"""get_ledger_status: GET /api/v1/bills/ledger/status; any shape, a bare boolean as connected."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "get_ledger_status"
PATH = "/api/v1/bills/ledger/status"


def test_unknown_input_is_refused_and_nothing_sent(kit):
    kit.bad_input(KEY, {"ledger": "xero"}, "", "'ledger' is not allowed here")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"connected": True, "ledgerName": "Xero"}, {"connected": True, "ledgerName": "Xero"}),
        ({"status": "Connected"}, {"status": "Connected"}),
        (True, {"connected": True}),
        (False, {"connected": False}),
    ],
)
def test_the_answer_passes_through_whatever_its_shape(kit, body, expected):
    kit.api.get(
        kit.url(PATH),
        json=body,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {})
    assert result.output == expected
    kit.fits(KEY, result)


@pytest.mark.integration
def test_against_the_sandbox(live, sandbox):
    sandbox.admin("POST", "/_admin/config", {"ledgerConnected": True})
    assert run_action(KEY, {}, live).output["connected"] is True
