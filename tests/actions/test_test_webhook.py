"""test_webhook: POST /api/v1/webhooks/{id}/test (spec 6)."""

from __future__ import annotations

import time

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import WriteAccessError

KEY = "test_webhook"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/webhooks/3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d/test"
INPUT = {"id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"}
ANSWER = {"queued": True}


def test_sends_the_exact_request(kit):
    kit.api.add(
        "POST",
        kit.url(PATH),
        status=200,
        json={"queued": True},
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            kit.no_body(),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 200
    assert result.output == {"queued": True, "id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"}
    kit.fits(KEY, result)


def test_needs_write_access():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).needs_write is True


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    made = run_action(
        "subscribe_webhook",
        {"hookUrl": "http://127.0.0.1:9/h", "webhookEvent": "proposal.accepted"},
        live,
    )
    result = run_action(KEY, {"id": made.output["id"]}, live)
    assert result.output["id"] == made.output["id"]
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"id": made.output["id"]}, live_ro)
    # The test delivery really is attempted; drop its retries so that no delivery thread
    # outlives this test (a later test's HTTP mock would see it).
    assert sandbox.wait_for_deliveries(1)[0]["event"] == "proposal.accepted"
    sandbox.reset()
    deadline = time.monotonic() + 60  # a bound against a hang; the loop ends when idle
    while not sandbox.state.dispatcher.idle() and time.monotonic() < deadline:
        time.sleep(0.01)
