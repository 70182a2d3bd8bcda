"""subscribe_webhook: POST /api/v1/webhooks (spec 2.8, 6): the secret comes back once."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "subscribe_webhook"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/webhooks"
INPUT = {
    "hookUrl": "https://hooks.example.com/pf",
    "webhookEvent": "proposal.accepted",
    "webhookName": "CRM",
}
ANSWER = {
    "id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
    "url": "https://hooks.example.com/pf",
    "event": "proposal.accepted",
    "webhookSecret": "whsec_1",
}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"hookUrl": "ftp://x", "webhookEvent": "proposal.accepted"}, "hookUrl", "got 'ftp://x'"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request(kit):
    kit.api.add(
        "POST",
        kit.url(PATH),
        status=201,
        json={
            "id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            "url": "https://hooks.example.com/pf",
            "event": "proposal.accepted",
            "webhookSecret": "whsec_1",
        },
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            matchers.json_params_matcher(
                {
                    "hookUrl": "https://hooks.example.com/pf",
                    "webhookEvent": "proposal.accepted",
                    "webhookName": "CRM",
                },
                strict_match=True,
            ),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 201
    assert result.output == ANSWER
    kit.fits(KEY, result)


def test_needs_write_access():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).needs_write is True


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    data = {"hookUrl": "http://127.0.0.1:9/hook", "webhookEvent": "proposal.accepted"}
    result = run_action(KEY, data, live)
    assert result.status == 201
    assert result.output["webhookSecret"]
    with pytest.raises(WriteAccessError):
        run_action(KEY, data, live_ro)
