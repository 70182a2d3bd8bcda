"""unsubscribe_webhook: DELETE /api/v1/webhooks/{id}."""

from __future__ import annotations

import pytest
from responses import matchers

from practiceflow.engine import run_action
from practiceflow.errors import NotFoundError, WriteAccessError

KEY = "unsubscribe_webhook"
EK = "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58"
PATH = "/api/v1/webhooks/3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
INPUT = {"id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"}


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"id": "hook-1"}, "id", "got 'hook-1'; expected a UUID"),
    ],
)
def test_bad_input_names_the_field_and_sends_nothing(kit, data, path, message):
    kit.bad_input(KEY, data, path, message)


def test_sends_the_exact_request(kit):
    kit.api.add(
        "DELETE",
        kit.url(PATH),
        status=204,
        body="",
        match=[
            matchers.header_matcher(kit.auth),
            matchers.query_param_matcher({}),
            kit.no_body(),
        ],
    )
    result = kit.run(KEY, INPUT)
    assert result.status == 204
    assert result.output == {"id": "3f2b1c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "deleted": True}
    kit.fits(KEY, result)


def test_needs_write_access():
    from practiceflow.manifest import default_registry

    assert default_registry().action(KEY).needs_write is True


@pytest.mark.integration
def test_against_the_sandbox(live, live_ro, sandbox):
    made = run_action(
        "subscribe_webhook",
        {"hookUrl": "http://127.0.0.1:9/h", "webhookEvent": "eform.submitted"},
        live,
    )
    with pytest.raises(WriteAccessError):
        run_action(KEY, {"id": made.output["id"]}, live_ro)
    result = run_action(KEY, {"id": made.output["id"]}, live)
    assert result.output["deleted"] is True
    with pytest.raises(NotFoundError):
        run_action(KEY, {"id": made.output["id"]}, live)
