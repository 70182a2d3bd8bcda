"""check_credentials: GET /api/v1/auth/validate (spec 2.8b, 5.8)."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action

KEY = "check_credentials"
PATH = "/api/v1/auth/validate"
CHECK = {
    "authenticated": True,
    "message": "ok",
    "clientID": "c",
    "clientName": "Zap",
    "canWrite": False,
    "timestamp": "2024-05-01T09:30:00Z",
}


def test_unknown_input_is_refused_and_nothing_sent(kit):
    kit.bad_input(KEY, {"clientID": "x"}, "", "'clientID' is not allowed here")


def test_sends_no_parameters_and_reads_can_write(kit):
    kit.api.get(
        kit.url(PATH),
        json=CHECK,
        match=[matchers.header_matcher(kit.auth), matchers.query_param_matcher({})],
    )
    result = kit.run(KEY, {})
    assert result.output == CHECK
    kit.fits(KEY, result)


@pytest.mark.parametrize("status", [401, 429, 500])
def test_error_statuses(kit, status):
    error = kit.error_status(KEY, {}, "GET", kit.url(PATH), status)
    if status == 401:
        assert "Client ID and secret" in error.hint


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro):
    assert run_action(KEY, {}, live).output["canWrite"] is True
    assert run_action(KEY, {}, live_ro).output["canWrite"] is False
